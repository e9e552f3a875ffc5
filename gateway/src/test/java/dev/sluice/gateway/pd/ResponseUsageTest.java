package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ResponseUsageTest {
    private static ResponseUsage scan(String json) throws IOException {
        byte[] b = (json + "GARBAGE-PAST-THE-LENGTH").getBytes(StandardCharsets.UTF_8);
        return ResponseUsage.scan(b, json.getBytes(StandardCharsets.UTF_8).length);
    }

    @Test
    void readsOpenAiUsage() throws IOException {
        ResponseUsage u = scan("{\"id\":\"x\",\"choices\":[{\"message\":{\"content\":\"usage: {\\\"prompt_tokens\\\": 99}\"}}],"
                + "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":8,\"total_tokens\":20}}");
        assertThat(u).isEqualTo(new ResponseUsage(12, 8));
    }

    @Test
    void readsSglangMetaInfoAndSumsABatch() throws IOException {
        ResponseUsage u = scan("[{\"text\":\"a\",\"meta_info\":{\"prompt_tokens\":5,\"completion_tokens\":2}},"
                + "{\"text\":\"b\",\"meta_info\":{\"prompt_tokens\":7,\"completion_tokens\":3,\"id\":\"r\"}}]");
        assertThat(u).isEqualTo(new ResponseUsage(12, 5));
    }

    @Test
    void absentCountsAreZero() throws IOException {
        assertThat(scan("{\"choices\":[],\"usage\":null}")).isEqualTo(new ResponseUsage(0, 0));
        assertThat(scan("[]")).isEqualTo(new ResponseUsage(0, 0));
    }

    @Test
    void refusesWhatIsNotOneJsonObjectOrList() {
        assertThatThrownBy(() -> scan("\"just a string\"")).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> scan("{\"a\":1} {\"b\":2}")).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> scan("{\"a\":[1,2}")).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> scan("Internal Server Error")).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> scan("")).isInstanceOf(IOException.class);
    }
}
