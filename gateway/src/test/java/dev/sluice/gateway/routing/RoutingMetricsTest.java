package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.RoutingConfig;
import dev.sluice.gateway.metrics.RoutingMetrics;
import io.micrometer.prometheus.PrometheusConfig;
import io.micrometer.prometheus.PrometheusMeterRegistry;
import java.util.List;
import org.junit.jupiter.api.Test;

class RoutingMetricsTest {
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final RoutingMetrics metrics = new RoutingMetrics(registry);
    private final List<Worker> prefills = RoutingFixtures.workers(WorkerRole.PREFILL, 2);
    private final List<Worker> decodes = RoutingFixtures.workers(WorkerRole.DECODE, 1);

    private double decisions(String role, String policy, String reason) {
        return registry.get("sluice.routing.decisions").tags("role", role, "policy", policy, "reason", reason).counter().count();
    }

    @Test
    void exportsEveryReasonAtZeroAndCountsDecisions() {
        RoutingPolicy prefill = RoutingPolicies.create(RoutingConfig.defaults(), WorkerRole.PREFILL);
        RoutingPolicy decode = RoutingPolicies.create(RoutingConfig.defaults(), WorkerRole.DECODE);
        metrics.bind(WorkerRole.PREFILL, prefill, prefills);
        metrics.bind(WorkerRole.DECODE, decode, decodes);

        String text = registry.scrape();
        assertThat(text).contains("# HELP sluice_routing_decisions_total routing decisions");
        for (String reason : List.of("prefix_hit", "prefix_miss", "balance_override")) {
            assertThat(decisions("prefill", "cache_aware", reason)).isZero();
        }
        assertThat(decisions("decode", "least_load", "least_load")).isZero();
        assertThat(text).contains("sluice_routing_tree_size{role=\"prefill\",worker=\"10.0.0.0:30000\",} 0.0");

        metrics.decided(WorkerRole.PREFILL, prefill, CacheAwarePolicy.PREFIX_HIT);
        metrics.decided(WorkerRole.PREFILL, prefill, new String("prefix_hit")); // equal, not identical
        metrics.decided(WorkerRole.DECODE, decode, LeastLoadPolicy.REASON);

        assertThat(decisions("prefill", "cache_aware", "prefix_hit")).isEqualTo(2.0);
        assertThat(decisions("decode", "least_load", "least_load")).isEqualTo(1.0);
    }

    @Test
    void theTreeGaugeFollowsThePolicyBoundNow() {
        RoutingPolicy first = RoutingPolicies.create(RoutingConfig.defaults(), WorkerRole.PREFILL);
        metrics.bind(WorkerRole.PREFILL, first, prefills);
        first.dispatched(prefills.get(1), new RoutingRequest("x".repeat(1234), 300));
        assertThat(registry.get("sluice.routing.tree.size").tags("role", "prefill", "worker", "10.0.0.1:30000")
                .gauge().value()).isEqualTo(1234.0);

        RoutingPolicy reloaded = new RoundRobinRouting(); // a reload switched the policy
        metrics.bind(WorkerRole.PREFILL, reloaded, prefills);
        metrics.decided(WorkerRole.PREFILL, reloaded, RoundRobinRouting.REASON);

        assertThat(registry.get("sluice.routing.tree.size").tags("role", "prefill", "worker", "10.0.0.1:30000")
                .gauge().value()).isZero();
        assertThat(decisions("prefill", "round_robin", "round_robin")).isEqualTo(1.0);
    }
}
