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
        GatewayConfig cfg = ConfigLoader.parse("""
                workers:
                  prefill: [{url: "http://10.0.0.1:1"}, {url: "http://10.0.0.2:1"}, {url: "http://10.0.0.3:1"}]
                  decode: [{url: "http://10.0.1.1:1"}]
                routing:
                  prefill: { policy: cache_aware }
                """, "test");
        WorkerSet workers = new WorkerSet(cfg.workers());
        workers.all().forEach(w -> w.status(new WorkerStatus(WorkerState.HEALTHY, "", Instant.now())));
        return new AdmissionController(cfg.admission(), workers, AdmissionObserver.NONE, System::nanoTime,
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
    }
}
