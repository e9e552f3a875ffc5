package dev.sluice.gateway.tracing.otlp;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.AttributeKey;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The cached bytes are always those of the name or the attribute asked for, whatever came before. */
class Utf8CacheTest {
    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aRepeatedValueFindsItsLastFieldAndAnotherValueOrFieldDoesNot() {
        Utf8Cache c = new Utf8Cache();
        int worker = c.slot(AttributeKey.stringKey("sluice.worker"));
        assertThat(c.keyValue(worker, 9, "http://p:1")).as("nothing kept yet").isNull();
        byte[] field = utf8("field of p:1");
        c.keepKeyValue(worker, 9, "http://p:1", field, 0, field.length);
        assertThat(c.keyValue(worker, 9, new String("http://p:1"))).as("equal, not the same object").isEqualTo(field);
        assertThat(c.keyValue(worker, 3, "http://p:1")).as("the same value as an event's attribute").isNull();
        assertThat(c.keyValue(worker, 9, "http://d:2")).isNull();
        int attempt = c.slot(AttributeKey.longKey("sluice.attempt"));
        c.keepKeyValue(attempt, 9, 1L, field, 6, 8);
        assertThat(c.keyValue(attempt, 9, 1L)).isEqualTo(utf8("of"));
        assertThat(c.keyValue(attempt, 9, 2L)).isNull();
        assertThat(c.keyValue(attempt, 9, "1")).as("a string of the same name is another value").isNull();
        assertThat(c.keyValue(worker, 9, "http://p:1")).as("another key's value in between").isEqualTo(field);
    }

    @Test
    void aValueThatChangesEveryTimeIsKeptOnlyNowAndThenAndASettledOneAgainAtOnce() {
        Utf8Cache c = new Utf8Cache();
        int rid = c.slot(AttributeKey.stringKey("sluice.request_id"));
        for (int i = 0; i < 64; i++) {
            byte[] b = utf8("rid-" + i);
            assertThat(c.keyValue(rid, 9, "rid-" + i)).isNull();
            c.keepKeyValue(rid, 9, "rid-" + i, b, 0, b.length);
        }
        // kept: the first two changes, then every 16th (16, 32, 48): a copy for 5 requests of 64, not 64
        assertThat(c.keyValue(rid, 9, "rid-63")).as("the last change, not kept").isNull();
        assertThat(c.keyValue(rid, 9, "rid-48")).as("the last one kept").isEqualTo(utf8("rid-48"));
        byte[] settled = utf8("rid-settled");
        c.keepKeyValue(rid, 9, "rid-settled", settled, 0, settled.length);
        assertThat(c.keyValue(rid, 9, "rid-settled")).as("after a hit, the next change is kept at once").isEqualTo(settled);
        for (int i = 0; i < 40; i++) {
            byte[] b = utf8("again-" + i);
            c.keepKeyValue(rid, 9, "again-" + i, b, 0, b.length);
        }
        byte[] back = utf8("back");
        int tries = 0;
        while (c.keyValue(rid, 9, "back") == null) {
            c.keepKeyValue(rid, 9, "back", back, 0, back.length);
            tries++;
        }
        assertThat(tries).as("a value that settles after many changes is kept within 16").isBetween(1, 16);
        assertThat(c.keyValue(rid, 9, "back")).isEqualTo(back);
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
            byte[] v = utf8("v" + i);
            c.keepKeyValue(slot, 9, "v" + i, v, 0, v.length);
            assertThat(c.keyValue(slot, 9, "v" + i)).isEqualTo(v);
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
