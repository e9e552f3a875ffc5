package dev.sluice.gateway.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.admission.AdmissionSnapshot;
import dev.sluice.gateway.admission.FleetShares;
import dev.sluice.gateway.admission.TenantDemand;
import dev.sluice.gateway.admission.WorkerWindow;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.TokenizerConfig;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** What a renewal reports (capacity, usage, demand per resource) and how grants come back as limits. */
class FleetDemandTest {
    private final WorkerSet workers = new WorkerSet(new WorkersConfig(
            List.of(new WorkerEndpoint("http://p:1", "p", 1, 8998)), List.of(new WorkerEndpoint("http://d:2", "d", 2, null))));
    private final Worker prefill = workers.prefill().get(0);
    private final Worker decode = workers.decode().get(0);
    private final AdmissionConfig fleet = new AdmissionConfig(32, 65_536, Duration.ofSeconds(30), 8192, 8, 32_768, 64,
            10_000, Duration.ofSeconds(1), Duration.ofSeconds(60), Duration.ofSeconds(30), List.of("normal"), "normal",
            Map.of(), new TokenizerConfig(Optional.empty(), 4.0, 4, 1));

    private AdmissionSnapshot snapshot(int queued, long pending, long inPrefill) {
        return new AdmissionSnapshot(queued, new int[] {queued}, List.of(Map.of()), pending, inPrefill, 3, 1000, true,
                false, Map.of(prefill, new WorkerWindow(WorkerRole.PREFILL, 2, inPrefill, 0),
                decode, new WorkerWindow(WorkerRole.DECODE, 0, 0, 3)), Map.of(), 0, 0);
    }

    @Test
    void demandIsUsagePlusWhatWaitsPlusAHeadroom() {
        Map<Resource, FleetDemand.Line> lines = FleetDemand.of(fleet, snapshot(5, 3000, 1000), workers, 3, 5000, List.of());
        assertThat(lines.get(Resource.QUEUE)).isEqualTo(new FleetDemand.Line(32, 5, 5 + 3 + 1, 1));
        assertThat(lines.get(Resource.PENDING_TOKENS)).isEqualTo(new FleetDemand.Line(65_536, 3000, 3000 + 5000 + 2048, 2048));
        assertThat(lines.get(new Resource(Resource.Kind.PREFILL_REQUESTS, "http://p:1")))
                .isEqualTo(new FleetDemand.Line(8, 2, 2 + 5 + 1, 1));
        assertThat(lines.get(new Resource(Resource.Kind.PREFILL_TOKENS, "http://p:1")))
                .isEqualTo(new FleetDemand.Line(32_768, 1000, 1000 + 2000 + 1024, 1024));
        assertThat(lines.get(new Resource(Resource.Kind.DECODE_STREAMS, "http://d:2")))
                .isEqualTo(new FleetDemand.Line(64, 3, 3 + 5 + 2, 2));
        // what waits counts at most the capacity: one replica's flood does not drown the others' demand
        assertThat(FleetDemand.of(fleet, snapshot(500, 0, 0), workers, 0, 0, List.of())
                .get(new Resource(Resource.Kind.PREFILL_REQUESTS, "http://p:1")).demand()).isEqualTo(2 + 8 + 1);
    }

    @Test
    void theReportIsOneJsonObjectByRedisName() throws Exception {
        JsonNode json = new ObjectMapper().readTree(FleetDemand.json(FleetDemand.of(fleet, snapshot(0, 0, 0), workers, 0,
                0, List.of())));
        assertThat(json.fieldNames()).toIterable().containsExactly("queue", "pending_tokens",
                "prefill_requests|http://p:1", "prefill_tokens|http://p:1", "decode_streams|http://d:2");
        // capacity, usage, demand, enforced (none yet), headroom
        assertThat(json.path("queue").toString()).isEqualTo("[32,0,1,0,1]");
        assertThat(Resource.parse("prefill_tokens|http://p:1"))
                .isEqualTo(new Resource(Resource.Kind.PREFILL_TOKENS, "http://p:1"));
        assertThat(Resource.parse("tenant_rate|x")).isNull(); // a newer replica's resource: ignored
    }

    @Test
    void theReportCarriesTheGrantInForceAndADrainingReplicaAsksForItsUsageAndTheWindowsItsQueueNeeds() throws Exception {
        Map<Resource, FleetDemand.Line> lines = FleetDemand.of(fleet, snapshot(5, 3000, 1000), workers, 3, 0, List.of());
        JsonNode json = new ObjectMapper().readTree(FleetDemand.json(lines, Map.of(Resource.QUEUE, 12L), false));
        assertThat(json.path("queue").toString()).isEqualTo("[32,5,9,12,1]");
        JsonNode draining = new ObjectMapper().readTree(FleetDemand.json(lines, Map.of(Resource.QUEUE, 12L), true));
        assertThat(draining.path("queue").toString()).as("usage only, no headroom").isEqualTo("[32,5,5,12,0]");
        // a window: its usage and what waits for it (5 queued), still to be served while it drains
        String window = "prefill_requests|http://p:1";
        assertThat(json.path(window).get(2).asLong() - json.path(window).get(4).asLong())
                .as("the work in the line not draining").isEqualTo(draining.path(window).get(2).asLong());
        assertThat(draining.path(window).get(2).asLong()).isGreaterThan(draining.path(window).get(1).asLong());
        assertThat(draining.path(window).get(4).asLong()).isZero();
    }

    @Test
    void grantsBecomeLimitsAndWhatIsNotGrantedIsTheFleetsOverN() {
        FleetShares s = FleetDemand.shares(Map.of(Resource.QUEUE, 11L, new Resource(Resource.Kind.PREFILL_REQUESTS,
                "http://p:1"), 3L), fleet, 3);
        assertThat(s.maxQueuedRequests()).isEqualTo(11);
        assertThat(s.maxPendingTokens()).isEqualTo(65_536 / 3);
        assertThat(s.prefillRequests()).containsExactly(Map.entry("http://p:1", 3));
        assertThat(s.divisor()).isEqualTo(3);
        Map<Resource, Long> fallback = FleetDemand.fallback(FleetDemand.of(fleet, snapshot(0, 0, 0), workers, 0, 0, List.of()), 3);
        assertThat(fallback.get(Resource.QUEUE)).isEqualTo(10L);
        assertThat(fallback.get(new Resource(Resource.Kind.DECODE_STREAMS, "http://d:2"))).isEqualTo(21L);
    }

    @Test
    void aTenantsRateIsLeasedByWhatItUsedAndWasRefusedAndItsGrantIsItsRateHere() throws Exception {
        // acme: 6,000 tokens/min configured, 2,000 in force here, used 1,500, refused 9,000 (counted up to the capacity)
        Map<Resource, FleetDemand.Line> lines = FleetDemand.of(fleet, snapshot(0, 0, 0), workers, 0, 0,
                List.of(new TenantDemand("acme", 6_000, 2_000, 1_500, 9_000), new TenantDemand("b|c", 640, 0, 0, 0)));
        Resource acme = new Resource(Resource.Kind.TENANT_TOKENS, "acme");
        assertThat(lines.get(acme)).isEqualTo(new FleetDemand.Line(6_000, 2_000, 1_500 + 6_000 + 6_000 / 32, 6_000 / 32));
        assertThat(lines.get(new Resource(Resource.Kind.TENANT_TOKENS, "b|c")).demand()).as("idle: the headroom")
                .isEqualTo(20);
        JsonNode json = new ObjectMapper().readTree(FleetDemand.json(lines));
        assertThat(json.path("tenant_tokens|acme").toString()).isEqualTo("[6000,2000,7687,0,187]");
        assertThat(Resource.parse("tenant_tokens|b|c")).as("a tenant's name may hold a bar")
                .isEqualTo(new Resource(Resource.Kind.TENANT_TOKENS, "b|c"));

        FleetShares s = FleetDemand.shares(Map.of(acme, 4_500L), fleet, 3);
        assertThat(s.tenantTokens()).containsExactly(Map.entry("acme", 4_500L));
        // Redis gone past the lease: every leased tenant's rate / N, like the budgets
        assertThat(FleetDemand.fallback(lines, 3).get(acme)).isEqualTo(2_000L);
    }
}
