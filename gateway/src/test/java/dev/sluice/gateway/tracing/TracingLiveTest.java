package dev.sluice.gateway.tracing;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.TracingConfig;
import dev.sluice.gateway.testing.OtlpReceiver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * {@link Tracing} changed while it runs: a prepared change committed or discarded, a replaced engine that
 * retires (its late spans counted, nothing of it kept), and counters that add up every engine's.
 */
class TracingLiveTest {
    private static final RequestTrace.Facts FACTS =
            new RequestTrace.Facts("chat", "m", 4, "/v1/chat/completions", "rid-1", false);

    private static TracingConfig config(String endpoint, double ratio) {
        return new TracingConfig(endpoint, TracingConfig.Protocol.HTTP_PROTOBUF, Map.of(), Duration.ofSeconds(2),
                ratio, "live-test", false);
    }

    private static Set<Thread> exportThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().equals("sluice-tracing-export")).collect(Collectors.toSet());
    }

    private static Set<Long> exportThreadIds() {
        return exportThreads().stream().map(Thread::getId).collect(Collectors.toSet());
    }

    private static void oneRequest(Tracing tracing) {
        tracing.request(null, FACTS, System.nanoTime()).end(200, "ok", 1, "");
    }

    @Test
    void aDiscardedChangeStopsWhatItStartedAndChangesNothing() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (Tracing tracing = Tracing.live(Optional.empty(), registry)) {
            Set<Thread> before = exportThreads();
            Tracing.Change change = tracing.prepare(Optional.of(config("http://127.0.0.1:9/v1/traces", 1.0)));
            Set<Thread> started = exportThreads();
            started.removeAll(before);
            assertThat(started).as("its export thread runs before it is committed").hasSize(1);
            assertThat(tracing.on()).isFalse();

            change.discard();

            assertThat(tracing.on()).isFalse();
            assertThat(tracing.request(null, FACTS, System.nanoTime())).isSameAs(RequestTrace.NONE);
            assertThat(started.iterator().next().isAlive()).isFalse();
            assertThat(registry.find("sluice.tracing.spans.exported").meter())
                    .as("a change never committed registers no series").isNull();
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
            assertThat(dropped(registry, "queue_full")).isZero();
        } finally {
            collector.close();
        }
        assertThat(collector.spans()).hasSize(2);
        assertThat(exported(registry)).as("after every engine stopped").isEqualTo(2);
    }

    @Test
    void aRetiredEngineCountsTheSpansItsRequestsEndLaterAndIsNotKept() throws Exception {
        OtlpReceiver collector = OtlpReceiver.start(OtlpReceiver.Transport.HTTP);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Set<Long> prior = exportThreadIds();
        try (Tracing tracing = Tracing.live(Optional.of(config(collector.endpoint(), 1.0)), registry,
                Duration.ofMillis(200))) {
            Set<Long> first = exportThreadIds();
            first.removeAll(prior);
            assertThat(first).hasSize(1);
            oneRequest(tracing); // this thread has written into the first engine's chunk
            WeakReference<SpanExport> firstExport = new WeakReference<>(tracing.inForce().export());
            RequestTrace early = tracing.request(null, FACTS, System.nanoTime()); // started under the first
            RequestTrace inTime = tracing.request(null, FACTS, System.nanoTime());

            tracing.prepare(Optional.of(config(collector.endpoint(), 0.5))).commit();
            inTime.end(200, "ok", 1, ""); // within the retirement delay: exported by the engine it started under
            assertThat(eventually(Duration.ofSeconds(10), () -> exported(registry) == 2)).isTrue();
            assertThat(eventually(Duration.ofSeconds(10), () -> exportThreadIds().stream().noneMatch(first::contains)))
                    .as("the first engine's export thread stopped after its retirement delay").isTrue();

            early.end(200, "ok", 1, ""); // after: dropped and counted, not lost unseen
            assertThat(dropped(registry, "exporter_retired")).isEqualTo(1);
            assertThat(exported(registry)).isEqualTo(2);
            early = null;
            inTime = null;
            // nothing keeps the retired export (its buffers): not the threads that wrote spans into it, not its
            // requests' recorder
            assertThat(eventually(Duration.ofSeconds(10), () -> {
                System.gc();
                return firstExport.get() == null;
            })).isTrue();
        } finally {
            collector.close();
        }
        assertThat(collector.spans()).hasSize(2);
    }

    private static double exported(SimpleMeterRegistry registry) {
        return registry.get("sluice.tracing.spans.exported").functionCounter().count();
    }

    private static double dropped(SimpleMeterRegistry registry, String reason) {
        return registry.get("sluice.tracing.spans.dropped").tag("reason", reason).functionCounter().count();
    }
}
