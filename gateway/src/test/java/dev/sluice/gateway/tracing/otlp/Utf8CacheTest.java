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
        Utf8Cache.Attribute worker = c.attribute(AttributeKey.stringKey("sluice.worker"));
        assertThat(worker.keyValue(9, "http://p:1")).as("nothing kept yet").isNull();
        byte[] field = utf8("field of p:1");
        worker.keep(9, "http://p:1", field, 0, field.length);
        assertThat(worker.keyValue(9, new String("http://p:1"))).as("equal, not the same object").isEqualTo(field);
        assertThat(worker.keyValue(3, "http://p:1")).as("the same value as an event's attribute").isNull();
        assertThat(worker.keyValue(9, "http://d:2")).isNull();
        Utf8Cache.Attribute attempt = c.attribute(AttributeKey.longKey("sluice.attempt"));
        attempt.keep(9, 1L, field, 6, 8);
        assertThat(attempt.keyValue(9, 1L)).isEqualTo(utf8("of"));
        assertThat(attempt.keyValue(9, 2L)).isNull();
        assertThat(attempt.keyValue(9, "1")).as("a string of the same name is another value").isNull();
        assertThat(worker.keyValue(9, "http://p:1")).as("another key's value in between").isEqualTo(field);
    }

    @Test
    void aValueThatChangesEveryTimeIsKeptOnlyNowAndThenAndASettledOneAgainAtOnce() {
        Utf8Cache c = new Utf8Cache();
        Utf8Cache.Attribute rid = c.attribute(AttributeKey.stringKey("sluice.request_id"));
        for (int i = 0; i < 64; i++) {
            byte[] b = utf8("rid-" + i);
            assertThat(rid.keyValue(9, "rid-" + i)).isNull();
            rid.keep(9, "rid-" + i, b, 0, b.length);
        }
        // kept: the first two changes, then every 16th (16, 32, 48): a copy for 5 requests of 64, not 64
        assertThat(rid.keyValue(9, "rid-63")).as("the last change, not kept").isNull();
        assertThat(rid.keyValue(9, "rid-48")).as("the last one kept").isEqualTo(utf8("rid-48"));
        byte[] settled = utf8("rid-settled");
        rid.keep(9, "rid-settled", settled, 0, settled.length);
        assertThat(rid.keyValue(9, "rid-settled")).as("after a hit, the next change is kept at once").isEqualTo(settled);
        for (int i = 0; i < 40; i++) {
            byte[] b = utf8("again-" + i);
            rid.keep(9, "again-" + i, b, 0, b.length);
        }
        byte[] back = utf8("back");
        int tries = 0;
        while (rid.keyValue(9, "back") == null) {
            rid.keep(9, "back", back, 0, back.length);
            tries++;
        }
        assertThat(tries).as("a value that settles after many changes is kept within 16").isBetween(1, 16);
        assertThat(rid.keyValue(9, "back")).isEqualTo(back);
    }

    @Test
    void aKeyMadeAtRunTimeFindsItsNameAndEndlessNewNamesStayBounded() {
        Utf8Cache c = new Utf8Cache();
        Utf8Cache.Attribute room = c.attribute(AttributeKey.longKey("sluice.sglang.bootstrap_room"));
        assertThat(c.attribute(AttributeKey.longKey(new String("sluice.sglang.bootstrap_room")))).isSameAs(room);
        assertThat(room.keyBytes).isEqualTo(utf8("sluice.sglang.bootstrap_room"));
        for (int i = 0; i < 10_000; i++) {
            String name = "k" + i;
            Utf8Cache.Attribute slot = c.attribute(AttributeKey.stringKey(name));
            assertThat(slot.keyBytes).isEqualTo(utf8(name));
            byte[] v = utf8("v" + i);
            slot.keep(9, "v" + i, v, 0, v.length);
            assertThat(slot.keyValue(9, "v" + i)).isEqualTo(v);
        }
        Utf8Cache.Attribute again = c.attribute(AttributeKey.longKey("sluice.sglang.bootstrap_room"));
        assertThat(again.keyBytes).isEqualTo(utf8("sluice.sglang.bootstrap_room"));
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
