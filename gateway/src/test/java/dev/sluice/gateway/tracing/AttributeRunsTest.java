package dev.sluice.gateway.tracing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.tracing.otlp.TraceRequestEncoder;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.sdk.resources.Resource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Spans whose attributes repeat the last span's of the same name in part (copied as runs) are
 * written byte for byte as an encoder with no history writes them, whatever changed: a value at the
 * start, the middle or the end, a key, the count, a list, another span's name in between.
 */
class AttributeRunsTest {
    private static final List<AttributeKey<?>> KEYS = List.of(AttributeKey.stringKey("gen_ai.request.model"),
            AttributeKey.longKey("sluice.attempt"), AttributeKey.stringKey("sluice.request_id"),
            AttributeKey.booleanKey("sluice.stream"), AttributeKey.doubleKey("sluice.ttft_s"),
            AttributeKey.stringArrayKey("gen_ai.response.finish_reasons"), AttributeKey.stringKey("sluice.tenant"));
    private final SpanRecorder recorder = new SpanRecorder(Resource.getDefault(), s -> { });

    @SuppressWarnings({"unchecked", "rawtypes"})
    private RecordedSpan span(String name, Random r) {
        RecordedSpan s = new RecordedSpan(recorder, 0, 1, 2, 3 + r.nextInt(1000), 0, false, (byte) 1,
                TraceState.getDefault(), name, SpanKind.INTERNAL, 1, 8);
        int n = r.nextInt(10) < 8 ? KEYS.size() : r.nextInt(KEYS.size() + 1); // mostly the usual count
        for (int i = 0; i < n; i++) {
            AttributeKey key = KEYS.get(r.nextInt(20) == 0 ? r.nextInt(KEYS.size()) : i); // now and then another key
            s.set(key, value(key, r));
        }
        s.end();
        return s;
    }

    // the usual value mostly; now and then another, among them doubles that equals() confuses
    // (NaNs of other bits, -0.0) and text that is not ASCII
    private static final double[] DOUBLES = {0.5, 0.25, -0.0, 0.0, Double.NaN,
            Double.longBitsToDouble(0x7ff8000000000001L), Double.longBitsToDouble(0xfff8000000000000L)};

    // a list set on many spans and changed between them: what was held of it must be what it was then
    private final List<String> shared = new ArrayList<>(List.of("stop"));

    private Object value(AttributeKey<?> key, Random r) {
        boolean usual = r.nextInt(4) != 0;
        return switch (key.getType()) {
            case STRING -> usual ? "llama-3-8b" : r.nextBoolean() ? "v" + r.nextInt(3) : "prompt é – 東京";
            case LONG -> usual ? 1L : (long) r.nextInt(300);
            case BOOLEAN -> usual || r.nextBoolean();
            case DOUBLE -> DOUBLES[usual ? 0 : r.nextInt(DOUBLES.length)];
            case STRING_ARRAY -> usual ? List.of("stop") : switch (r.nextInt(3)) {
                case 0 -> new ArrayList<>(List.of("length", "stop"));
                case 1 -> shared;
                default -> List.of("stop", "stop");
            };
            default -> throw new IllegalArgumentException(key.toString());
        };
    }

    private static byte[] appended(TraceRequestEncoder e, RecordedSpan s) {
        e.discard();
        e.append(s);
        return Arrays.copyOf(e.array(), e.size());
    }

    @Test
    void spansThatRepeatTheLastOnesAttributesInPartAreWrittenAsWithNoHistory() throws Exception {
        Random r = new Random(7);
        TraceRequestEncoder withHistory = new TraceRequestEncoder(64);
        for (int i = 0; i < 5_000; i++) {
            // mostly two names; now and then one of 40 others, so that the table of names starts over
            String name = r.nextInt(10) == 0 ? "span " + r.nextInt(40) : r.nextInt(5) == 0 ? "admission" : "generate";
            RecordedSpan s = span(name, r);
            byte[] mine = appended(withHistory, s);
            byte[] fresh = appended(new TraceRequestEncoder(64), s);
            assertThat(mine).as("span %d", i).isEqualTo(fresh);
            if (r.nextInt(3) == 0) { // the shared list changes after it was written
                if (shared.size() < 3 && r.nextBoolean()) {
                    shared.add(r.nextBoolean() ? "length" : "stop");
                } else if (shared.size() > 1) {
                    shared.remove(0);
                } else {
                    shared.set(0, shared.get(0).equals("stop") ? "length" : "stop");
                }
            }
        }
        // a span with more attributes than the runs hold, and one too long to be held, then the usual again
        RecordedSpan many = new RecordedSpan(recorder, 0, 1, 2, 3, 0, false, (byte) 1, TraceState.getDefault(),
                "generate", SpanKind.INTERNAL, 1, 100);
        RecordedSpan longOne = new RecordedSpan(recorder, 0, 1, 2, 3, 0, false, (byte) 1, TraceState.getDefault(),
                "generate", SpanKind.INTERNAL, 1, 2);
        for (int i = 0; i < 100; i++) {
            many.set(AttributeKey.longKey("k" + i), (long) i);
        }
        longOne.set(AttributeKey.stringKey("gen_ai.request.model"), "x".repeat(20_000));
        many.end();
        longOne.end();
        for (RecordedSpan s : List.of(many, longOne, longOne, span("generate", r), span("generate", r))) {
            assertThat(appended(withHistory, s)).isEqualTo(appended(new TraceRequestEncoder(64), s));
        }
        // and it decodes: the last one, as a collector reads it
        RecordedSpan last = span("generate", r);
        ScopeSpans decoded = ScopeSpans.parseFrom(appended(withHistory, last));
        assertThat(decoded.getSpans(0).getAttributesCount()).isEqualTo(last.attributeCount());
    }
}
