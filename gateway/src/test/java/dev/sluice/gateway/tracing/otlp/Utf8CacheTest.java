package dev.sluice.gateway.tracing.otlp;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.AttributeType;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The cached bytes are always those of the name or the attribute asked for, whatever came before. */
class Utf8CacheTest {
    private static final AttributeType T = AttributeType.STRING;
    private static final AttributeType L = AttributeType.LONG;
    private static final AttributeType D = AttributeType.DOUBLE;

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aRepeatedValueFindsItsLastFieldAndAnotherValueOrFieldDoesNot() {
        Utf8Cache c = new Utf8Cache();
        Utf8Cache.Attribute worker = c.attribute(AttributeKey.stringKey("sluice.worker"));
        assertThat(worker.keyValue(9, T, "http://p:1")).as("nothing kept yet").isNull();
        byte[] field = utf8("field of p:1");
        worker.keep(9, T, "http://p:1", field, 0, field.length);
        assertThat(worker.keyValue(9, T, new String("http://p:1"))).as("equal, not the same object").isEqualTo(field);
        assertThat(worker.keyValue(3, T, "http://p:1")).as("the same value as an event's attribute").isNull();
        assertThat(worker.keyValue(9, T, "http://d:2")).isNull();
        Utf8Cache.Attribute attempt = c.attribute(AttributeKey.longKey("sluice.attempt"));
        attempt.keep(9, L, 1L, field, 6, 8);
        assertThat(attempt.keyValue(9, L, 1L)).isEqualTo(utf8("of"));
        assertThat(attempt.keyValue(9, L, 2L)).isNull();
        assertThat(attempt.keyValue(9, T, "1")).as("a string of the same name is another value").isNull();
        assertThat(worker.keyValue(9, T, "http://p:1")).as("another key's value in between").isEqualTo(field);
    }

    @Test
    void onlyWhatWritesTheSameBytesMatches() {
        Utf8Cache c = new Utf8Cache();
        Utf8Cache.Attribute x = c.attribute(AttributeKey.stringKey("x"));
        byte[] field = utf8("field");
        x.keep(9, T, "5", field, 0, field.length);
        assertThat(x.keyValue(9, L, "5")).as("the same value under a key of another type").isNull();
        Utf8Cache.Attribute ttft = c.attribute(AttributeKey.doubleKey("sluice.ttft_s"));
        ttft.keep(9, D, Double.longBitsToDouble(0x7ff8000000000001L), field, 0, field.length);
        assertThat(ttft.keyValue(9, D, Double.NaN)).as("another NaN's bits").isNull();
        ttft.keep(9, D, 0.0, field, 0, field.length);
        assertThat(ttft.keyValue(9, D, -0.0)).isNull();
        assertThat(ttft.keyValue(9, D, 0.0)).isEqualTo(field);
        java.util.List<String> reasons = new java.util.ArrayList<>(java.util.List.of("stop"));
        assertThat(Utf8Cache.sameScalar(reasons, reasons)).as("a list may have changed since: never the same").isFalse();
        assertThat(Utf8Cache.sameScalar(null, null)).isFalse();
        Utf8Cache.Attribute prompt = c.attribute(AttributeKey.stringKey("prompt"));
        byte[] big = new byte[Utf8Cache.MAX_KEPT_FIELD + 1];
        prompt.keep(9, T, "long", big, 0, big.length);
        assertThat(prompt.keyValue(9, T, "long")).as("too long to hold").isNull();
    }

    /** A list is held as an immutable copy: equal contents match, a list changed since it was written does not. */
    @Test
    void aListMatchesElementForElementAndItsLaterChangesAreNotHeld() {
        Utf8Cache c = new Utf8Cache();
        AttributeType a = AttributeType.STRING_ARRAY;
        Utf8Cache.Attribute reasons = c.attribute(AttributeKey.stringArrayKey("gen_ai.response.finish_reasons"));
        java.util.List<String> set = new java.util.ArrayList<>(java.util.List.of("stop"));
        byte[] stop = utf8("field of [stop]");
        reasons.keep(9, a, set, stop, 0, stop.length);
        assertThat(reasons.keyValue(9, a, java.util.List.of("stop"))).as("equal contents, another list").isEqualTo(stop);
        assertThat(reasons.keyValue(9, a, set)).isEqualTo(stop);
        set.set(0, "length"); // the list set changes after it was written
        assertThat(reasons.keyValue(9, a, set)).as("its contents now are not what was held").isNull();
        assertThat(reasons.keyValue(9, a, java.util.List.of("stop"))).as("what was held is still [stop]").isEqualTo(stop);
        assertThat(reasons.keyValue(9, a, java.util.List.of("stop", "stop"))).isNull();
        assertThat(reasons.keyValue(9, a, java.util.List.of())).isNull();
        assertThat(reasons.keyValue(9, AttributeType.STRING, "stop")).isNull();
        java.util.List<String> immutable = java.util.List.of("stop");
        assertThat(Utf8Cache.kept(immutable)).as("an immutable list is its own copy").isSameAs(immutable);
        assertThat(Utf8Cache.kept(java.util.Arrays.asList("stop", null))).as("a null element: never held").isNull();
        assertThat(Utf8Cache.kept(java.util.List.of(new Object()))).isNull();
        assertThat(Utf8Cache.sameValue(java.util.List.of(0.0), java.util.List.of(-0.0))).as("bit for bit").isFalse();
        assertThat(Utf8Cache.sameValue(java.util.List.of(1L, 2L), java.util.List.of(1L, 2L))).isTrue();
    }

    @Test
    void aValueThatChangesEveryTimeIsKeptOnlyNowAndThenAndASettledOneAgainAtOnce() {
        Utf8Cache c = new Utf8Cache();
        Utf8Cache.Attribute rid = c.attribute(AttributeKey.stringKey("sluice.request_id"));
        for (int i = 0; i < 64; i++) {
            byte[] b = utf8("rid-" + i);
            assertThat(rid.keyValue(9, T, "rid-" + i)).isNull();
            rid.keep(9, T, "rid-" + i, b, 0, b.length);
        }
        // kept: the first two changes, then every 16th (16, 32, 48): a copy for 5 requests of 64, not 64
        assertThat(rid.keyValue(9, T, "rid-63")).as("the last change, not kept").isNull();
        assertThat(rid.keyValue(9, T, "rid-48")).as("the last one kept").isEqualTo(utf8("rid-48"));
        byte[] settled = utf8("rid-settled");
        rid.keep(9, T, "rid-settled", settled, 0, settled.length);
        assertThat(rid.keyValue(9, T, "rid-settled")).as("after a hit, the next change is kept at once").isEqualTo(settled);
        for (int i = 0; i < 40; i++) {
            byte[] b = utf8("again-" + i);
            rid.keep(9, T, "again-" + i, b, 0, b.length);
        }
        byte[] back = utf8("back");
        int tries = 0;
        while (rid.keyValue(9, T, "back") == null) {
            rid.keep(9, T, "back", back, 0, back.length);
            tries++;
        }
        assertThat(tries).as("a value that settles after many changes is kept within 16").isBetween(1, 16);
        assertThat(rid.keyValue(9, T, "back")).isEqualTo(back);
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
            slot.keep(9, T, "v" + i, v, 0, v.length);
            assertThat(slot.keyValue(9, T, "v" + i)).isEqualTo(v);
        }
        assertThat(c.attributeNames()).as("bounded, whatever names came").isBetween(1, 128);
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
