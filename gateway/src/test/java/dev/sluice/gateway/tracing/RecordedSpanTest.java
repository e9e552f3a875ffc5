package dev.sluice.gateway.tracing;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.sdk.resources.Resource;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A span's attributes: past their sized count, replaced, nothing after the end. */
class RecordedSpanTest {
    private final List<io.opentelemetry.sdk.trace.data.SpanData> ended = new ArrayList<>();
    private final SpanRecorder recorder = new SpanRecorder(Resource.getDefault(), ended::add);

    private RecordedSpan span(int expectedAttributes) {
        return new RecordedSpan(recorder, 0, 1, 2, 3, 0, false, (byte) 1, TraceState.getDefault(), "s",
                SpanKind.INTERNAL, 1, expectedAttributes);
    }

    @Test
    void addedAttributesPastTheSizedCountStillFitAndASetReplacesOne() {
        RecordedSpan s = span(2);
        for (int i = 0; i < 5; i++) {
            s.set(AttributeKey.longKey("k" + i), (long) i);
        }
        s.set(AttributeKey.stringKey("none"), null);
        s.set(AttributeKey.longKey("k1"), 10L);
        s.end();
        assertThat(s.getAttributes().size()).isEqualTo(5);
        assertThat(s.getAttributes().get(AttributeKey.longKey("k1"))).isEqualTo(10L);
        assertThat(s.getAttributes().get(AttributeKey.longKey("k4"))).isEqualTo(4L);
        assertThat(ended).containsExactly(s);
    }

    @Test
    void nothingIsAddedOrSetAfterTheEnd() {
        RecordedSpan s = span(4);
        s.set(AttributeKey.stringKey("a"), "1");
        s.end();
        s.set(AttributeKey.stringKey("b"), "2");
        s.set(AttributeKey.stringKey("a"), "3");
        assertThat(s.attributeCount()).isEqualTo(1);
        assertThat(s.getAttributes().get(AttributeKey.stringKey("a"))).isEqualTo("1");
    }
}
