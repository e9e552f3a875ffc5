package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class FinishReasonsTest {
    private static List<String> body(String json) {
        FinishReasons r = FinishReasons.collecting();
        byte[] b = json.getBytes(StandardCharsets.UTF_8);
        r.find(b, 0, b.length);
        return r.list();
    }

    @Test
    void wholeAnswersNameOnePerSequenceAndTextThatMentionsTheKeyIsNotOne() {
        assertThat(body("{\"choices\":[{\"index\":0,\"finish_reason\":\"stop\"},{\"index\":1,\"finish_reason\" : \"length\"}]}"))
                .containsExactly("stop", "length");
        assertThat(body("[{\"meta_info\":{\"finish_reason\":{\"type\":\"length\",\"length\":3}}},"
                + "{\"meta_info\":{\"finish_reason\":{\"type\":\"stop\",\"matched\":2}}}]")).containsExactly("length", "stop");
        assertThat(body("{\"choices\":[{\"message\":{\"content\":\"say \\\"finish_reason\\\": \\\"x\\\"\"},"
                + "\"finish_reason\":null}]}")).isEmpty();
    }

    @Test
    void aStreamsReasonIsReadFromItsLastEventEvenWhenCutAcrossChunks() {
        String stream = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":null}]}\n\n"
                + "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\n"
                + "data: [DONE]\n\n";
        for (int cut = 1; cut < stream.length(); cut += 7) {
            FailureScan scan = new FailureScan();
            scan.feed(Unpooled.copiedBuffer(stream.substring(0, cut), StandardCharsets.UTF_8));
            scan.feed(Unpooled.copiedBuffer(stream.substring(cut), StandardCharsets.UTF_8));
            scan.end();
            assertThat(scan.finishReasons()).as("cut at %d", cut).containsExactly("length");
        }
    }
}
