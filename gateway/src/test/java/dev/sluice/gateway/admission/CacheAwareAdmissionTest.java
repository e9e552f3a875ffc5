package dev.sluice.gateway.admission;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionFixtures.Recorder;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.routing.CacheAwarePolicy;
import dev.sluice.gateway.routing.RoutingPolicies;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.routing.WorkerStatus;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** cache_aware routing through the controller: the key the ticket prepared off the lock is what the tree sees. */
class CacheAwareAdmissionTest {
    private final List<String> reasons = new ArrayList<>();

    private AdmissionController controller() {
        return controller("""
                workers:
                  prefill: [{url: "http://10.0.0.1:1"}, {url: "http://10.0.0.2:1"}, {url: "http://10.0.0.3:1"}]
                  decode: [{url: "http://10.0.1.1:1"}]
                routing:
                  prefill: { policy: cache_aware }
                """, System::nanoTime);
    }

    private AdmissionController controller(String yaml, java.util.function.LongSupplier clock) {
        GatewayConfig cfg = ConfigLoader.parse(yaml, "test");
        WorkerSet workers = new WorkerSet(cfg.workers());
        workers.all().forEach(w -> w.status(new WorkerStatus(WorkerState.HEALTHY, "", Instant.now())));
        return new AdmissionController(cfg.admission(), workers, AdmissionObserver.NONE, clock,
                RoutingPolicies.create(cfg.routing(), WorkerRole.PREFILL),
                RoutingPolicies.create(cfg.routing(), WorkerRole.DECODE),
                (role, policy, reason) -> {
                    if (role == WorkerRole.PREFILL) {
                        reasons.add(reason);
                    }
                }, 1_000_000_000L);
    }

    private static Recorder run(AdmissionController c, String key) {
        Recorder r = new Recorder();
        Ticket t = new Ticket("r" + key.hashCode(), key.length() / 4, 1, "t", Long.MAX_VALUE, Runnable::run, r)
                .prefixKey(key);
        assertThat(c.submit(t)).isNull();
        c.prefillDone(t);
        c.release(t);
        return r;
    }

    @Test
    void aPromptSharingAPrefixGoesWhereThatPrefixWasSent() {
        AdmissionController c = controller();
        String system = "You are a helpful assistant. ".repeat(200);
        Recorder first = run(c, system + "What is the capital of France?");
        Recorder other = run(c, "x".repeat(6_000));
        Recorder again = run(c, system + "And of Spain?");

        assertThat(reasons).containsExactly(CacheAwarePolicy.PREFIX_MISS, CacheAwarePolicy.PREFIX_MISS,
                CacheAwarePolicy.PREFIX_HIT);
        assertThat(again.prefill).isSameAs(first.prefill);
        assertThat(other.prefill).isNotSameAs(first.prefill); // a new prefix goes to an empty tree
        assertThat(c.snapshot().idle()).isTrue();
        assertThat(c.prefillUncachedHeld()).isZero();
    }
    /**
     * One request at a time per prefill, a known rate of 1,000 tokens/s, on a fake clock; the share
     * guard off (three requests are no trend), a long prompt after a cached prefix still a hit.
     */
    private AdmissionController oneAtATime(java.util.concurrent.atomic.AtomicLong now) {
        return controller("""
                workers:
                  prefill: [{url: "http://10.0.0.1:1"}, {url: "http://10.0.0.2:1"}, {url: "http://10.0.0.3:1"}]
                  decode: [{url: "http://10.0.1.1:1"}]
                admission:
                  prefill: { max_inflight_requests: 1, max_inflight_time: 0s }
                  prefill_rate: { prior_tokens_per_second: 1000, from_telemetry: false }
                routing:
                  prefill: { policy: cache_aware, cache_aware: { balance_share_threshold: 0, match_threshold: 0.1 } }
                """, now::get);
    }

    private static Ticket submit(AdmissionController c, String key, Recorder r) {
        Ticket t = new Ticket("r" + key.hashCode(), key.length() / 4, 1, "t", Long.MAX_VALUE, Runnable::run, r)
                .prefixKey(key);
        assertThat(c.submit(t)).isNull();
        return t;
    }

    @Test
    void aFullWindowAtTheCachedWorkerIsWaitedForWhenWhatItStillComputesIsLessThanThePrefixElsewhere() {
        java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong(1_000_000_000L);
        AdmissionController c = oneAtATime(now);
        String system = "You are a helpful assistant. ".repeat(207); // ~6,000 characters, ~1,500 tokens
        Recorder earlier = run(c, system + "Hello!");
        // the next turn of a conversation on that prompt: only its question is new where the prompt is cached
        Recorder first = new Recorder();
        Ticket a = submit(c, system + "What is the capital of France?", first);
        assertThat(first.prefill).isSameAs(earlier.prefill);

        // its worker's window is full, but it computes ~10 tokens there; elsewhere ~1,500 are computed again
        Recorder second = new Recorder();
        Ticket b = submit(c, system + "And of Spain?", second);
        assertThat(second.granted()).as("waits for the worker with its prefix").isFalse();
        assertThat(reasons).containsExactly(CacheAwarePolicy.PREFIX_MISS, CacheAwarePolicy.PREFIX_HIT,
                CacheAwarePolicy.AFFINITY_WAIT);

        c.prefillDone(a);
        assertThat(second.granted()).isTrue();
        assertThat(second.prefill).isSameAs(first.prefill);
        assertThat(reasons).endsWith(CacheAwarePolicy.PREFIX_HIT);
        c.release(a);
        c.prefillDone(b);
        c.release(b);
        assertThat(c.snapshot().idle()).isTrue();
        assertThat(c.prefillUncachedHeld()).isZero();
    }

    @Test
    void aCachedWorkerWithMoreToComputeThanThePrefixIsNotWaitedFor() {
        java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong(1_000_000_000L);
        AdmissionController c = oneAtATime(now);
        String system = "You are a helpful assistant. ".repeat(207);
        Recorder earlier = run(c, system + "Hello!");
        // the prefix's worker is busy with a long document after the cached prompt (~8,000 tokens to compute)
        Recorder first = new Recorder();
        Ticket a = submit(c, system + "Summarise: " + "lorem ipsum dolor sit amet ".repeat(1_200), first);
        assertThat(first.prefill).isSameAs(earlier.prefill);
        Recorder second = new Recorder();
        Ticket b = submit(c, system + "And of Spain?", second);
        assertThat(second.granted()).as("recomputing ~1,500 tokens elsewhere beats waiting for ~8,000").isTrue();
        assertThat(second.prefill).isNotSameAs(first.prefill);
        assertThat(reasons).doesNotContain(CacheAwarePolicy.AFFINITY_WAIT);
        for (Ticket t : List.of(a, b)) {
            c.prefillDone(t);
            c.release(t);
        }
        assertThat(c.snapshot().idle()).isTrue();
        assertThat(c.prefillUncachedHeld()).isZero();
    }
}
