package dev.sluice.gateway.tracing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.gateway.metrics.Exemplars;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** The exemplar ids a request sets for its end are cleared on the loop's thread even if its log write throws. */
class RequestTraceExemplarTest {
    @Test
    void aWriteThatThrowsLeavesNoIdsOnTheThreadAndTheSpanEnded() {
        List<RecordedSpan> ended = new CopyOnWriteArrayList<>();
        SpanRecorder recorder = new SpanRecorder(Resource.getDefault(), ended::add);
        RequestTrace trace = RequestTrace.start(recorder, Sampler.alwaysOn(), Context.root(),
                new RequestTrace.Facts("chat", "m", 4, "/v1/chat/completions", "r1", false), System.nanoTime());
        Exemplars current = new Exemplars();
        String[] seen = new String[1];
        assertThatThrownBy(() -> trace.endAfter(() -> {
            seen[0] = current.getTraceId();
            throw new IllegalStateException("log write failed");
        }, 200, "ok", 3, "")).isInstanceOf(IllegalStateException.class);
        assertThat(seen[0]).as("the write ran under the request's ids").isEqualTo(trace.sampledTraceId());
        assertThat(current.getTraceId()).as("cleared although the write threw").isNull();
        assertThat(ended).hasSize(1);
    }
}
