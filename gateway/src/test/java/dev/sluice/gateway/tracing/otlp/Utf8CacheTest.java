package dev.sluice.gateway.tracing.otlp;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.AttributeKey;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The cached bytes are always the UTF-8 of the string asked for, whatever came before. */
class Utf8CacheTest {
    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aValueThatChangesGetsItsOwnBytesAndARepeatedOneIsReused() {
        Utf8Cache c = new Utf8Cache();
        int worker = c.slot(AttributeKey.stringKey("sluice.worker"));
        byte[] first = c.valueBytes(worker, "http://p:1");
        assertThat(first).isEqualTo(utf8("http://p:1"));
        assertThat(c.valueBytes(worker, new String("http://p:1"))).as("equal, not the same object").isSameAs(first);
        assertThat(c.valueBytes(worker, "http://d:2")).isEqualTo(utf8("http://d:2"));
        assertThat(c.valueBytes(worker, "tenant-é")).isEqualTo(utf8("tenant-é"));
        assertThat(c.valueBytes(worker, "")).isEmpty();
        int rid = c.slot(AttributeKey.stringKey("sluice.request_id"));
        assertThat(rid).isNotEqualTo(worker);
        assertThat(c.valueBytes(rid, "r1")).isEqualTo(utf8("r1"));
        assertThat(c.valueBytes(worker, "http://d:2")).as("another key's value in between").isEqualTo(utf8("http://d:2"));
    }

    @Test
    void aKeyMadeAtRunTimeFindsItsNameAndEndlessNewNamesStayBounded() {
        Utf8Cache c = new Utf8Cache();
        int room = c.slot(AttributeKey.longKey("sluice.sglang.bootstrap_room"));
        assertThat(c.slot(AttributeKey.longKey(new String("sluice.sglang.bootstrap_room")))).isEqualTo(room);
        assertThat(c.keyBytes(room)).isEqualTo(utf8("sluice.sglang.bootstrap_room"));
        for (int i = 0; i < 10_000; i++) {
            String name = "k" + i;
            int slot = c.slot(AttributeKey.stringKey(name));
            assertThat(c.keyBytes(slot)).isEqualTo(utf8(name));
            assertThat(c.valueBytes(slot, "v" + i)).isEqualTo(utf8("v" + i));
        }
        int again = c.slot(AttributeKey.longKey("sluice.sglang.bootstrap_room"));
        assertThat(c.keyBytes(again)).isEqualTo(utf8("sluice.sglang.bootstrap_room"));
    }

    @Test
    void namesThatShareASlotEachGetTheirOwnBytes() {
        Utf8Cache c = new Utf8Cache();
        for (int i = 0; i < 1000; i++) {
            String name = "span " + (i % 97);
            assertThat(c.nameBytes(name)).isEqualTo(utf8(name));
        }
        assertThat(c.nameBytes("prefill")).isEqualTo(utf8("prefill"));
        assertThat(c.nameBytes("chat llama-é")).isEqualTo(utf8("chat llama-é"));
    }
}
