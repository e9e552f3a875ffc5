package dev.sluice.gateway.tracing;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.TracingConfig;
import dev.sluice.gateway.testing.OtlpReceiver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@link Tracing} changed while it runs: a prepared change committed or discarded, and counters that add up every engine's. */
class TracingLiveTest {
    private static final RequestTrace.Facts FACTS =
            new RequestTrace.Facts("chat", "m", 4, "/v1/chat/completions", "rid-1", false);

    private static TracingConfig config(String endpoint, double ratio) {
        return new TracingConfig(endpoint, TracingConfig.Protocol.HTTP_PROTOBUF, Map.of(), Duration.ofSeconds(2),
                ratio, "live-test", false);
    }

    private static long exportThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().equals("sluice-tracing-export")).count();
    }

    private static void oneRequest(Tracing tracing) {
        tracing.request(null, FACTS, System.nanoTime()).end(200, "ok", 1, "");
    }

    @Test
    void aDiscardedChangeStopsWhatItStartedAndChangesNothing() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (Tracing tracing = Tracing.live(Optional.empty(), registry)) {
            long threads = exportThreads();
            Tracing.Change change = tracing.prepare(Optional.of(config("http://127.0.0.1:9/v1/traces", 1.0)));
            assertThat(exportThreads()).as("its export thread runs before it is committed").isEqualTo(threads + 1);
            assertThat(tracing.on()).isFalse();

            change.discard();

            assertThat(tracing.on()).isFalse();
            assertThat(tracing.request(null, FACTS, System.nanoTime())).isSameAs(RequestTrace.NONE);
            assertThat(eventually(Duration.ofSeconds(5), () -> exportThreads() == threads)).isTrue();
            // the same section as running is no change at all
            tracing.prepare(Optional.empty()).commit();
            assertThat(tracing.on()).isFalse();
        }
    }

    @Test
    void theCountersAddUpEveryEngineAcrossChangesAndNeverGoBack() throws Exception {
        OtlpReceiver collector = OtlpReceiver.start(OtlpReceiver.Transport.HTTP);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (Tracing tracing = Tracing.live(Optional.of(config(collector.endpoint(), 1.0)), registry)) {
            oneRequest(tracing);
            assertThat(eventually(Duration.ofSeconds(5), () -> exported(registry) == 1)).isTrue();

            TracingConfig second = config(collector.endpoint(), 1.0 - 1e-9); // another section: a new engine
            tracing.prepare(Optional.of(second)).commit();
            assertThat(tracing.on()).isTrue();
            assertThat(tracing.toString()).contains(collector.endpoint());
            assertThat(exported(registry)).as("the replaced engine's spans still count").isEqualTo(1);
            oneRequest(tracing);
            assertThat(eventually(Duration.ofSeconds(5), () -> exported(registry) == 2)).isTrue();

            tracing.prepare(Optional.empty()).commit();
            assertThat(tracing.on()).isFalse();
            oneRequest(tracing); // off: nothing recorded
            assertThat(exported(registry)).isEqualTo(2);
            assertThat(registry.get("sluice.tracing.spans.dropped").tag("reason", "queue_full").functionCounter()
                    .count()).isZero();
        } finally {
            collector.close();
        }
        assertThat(collector.spans()).hasSize(2);
        assertThat(exported(registry)).as("after every engine stopped").isEqualTo(2);
    }

    private static double exported(SimpleMeterRegistry registry) {
        return registry.get("sluice.tracing.spans.exported").functionCounter().count();
    }
}
