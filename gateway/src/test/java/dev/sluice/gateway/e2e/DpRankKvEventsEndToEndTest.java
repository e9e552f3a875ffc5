package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.ReplicaPair;
import dev.sluice.testbed.sim.SimWorker;
import dev.sluice.testbed.sim.RankAssignment;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Two gateway replicas in front of one simulated 1P1D pair whose servers run four data-parallel ranks
 * (SGLang's attention-DP ranks, or vLLM's engines), each rank with its own prefix cache publishing its
 * own KV events on the endpoint's port + rank (real ZMQ over loopback, real HTTP). No
 * {@code routing.kv_events.dp_ranks} is configured: the subscription follows the prefill's own
 * {@code dp_size} (SGLang) or the engines its {@code /metrics} shows (vLLM). Replica B, which never saw
 * the prompts replica A placed, sends each one back to the prefill rank that cached it, because the
 * rank's own events say so.
 */
class DpRankKvEventsEndToEndTest {
    private static final String TIMEOUTS = "{connect: 1s, first_token: 30s, idle_stream: 10s, request: 60s}";
    private static final String[] APPS = {"careful assistant", "terse reviewer", "playful tutor"};
    private final HttpClient http = HttpClient.newHttpClient();
    private ReplicaPair pair;

    @AfterEach
    void close() throws Exception {
        if (pair != null) {
            pair.close();
        }
    }

    @ParameterizedTest
    @EnumSource(value = SimMode.class, names = {"SGLANG", "VLLM"})
    void aReplicaSendsAPromptItNeverSawToThePrefillRankWhoseEventsHoldIt(SimMode mode) throws Exception {
        SimCluster cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDpSize(4)
                .withDecodeStep(Duration.ofMillis(2)).withHealthGeneration(false).withPrefixCacheTokens(1 << 16)
                .withKvEventsEndpoint("tcp://127.0.0.1:*"), mode);
        String yaml = yaml(mode, cluster);
        pair = ReplicaPair.start(cluster, yaml);
        PdTestbed a = pair.a;
        PdTestbed b = pair.b;
        for (PdTestbed bed : List.of(a, b)) {
            assertThat(eventually(Duration.ofSeconds(10), () -> bed.gateway.workers().all().stream()
                    .allMatch(w -> w.rankPlan().ranks() == 4))).as("every worker's dp_size read").isTrue();
        }
        // a flush clears every rank's cache, each on its own stream: both replicas hear all four
        pair.awaitSubscribed(http, cluster, DpRankKvEventsEndToEndTest::heardEveryRank);

        SimWorker prefill = cluster.prefillWorkers().get(0);
        for (String app : APPS) {
            HttpResponse<String> r = a.post("/v1/completions", completion(app, "first question"));
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        }
        List<Integer> placedByA = ranks(prefill);
        assertThat(placedByA).as("one rank each").hasSize(3).doesNotHaveDuplicates();
        assertThat(eventually(Duration.ofSeconds(10), () -> sameView(a, b))).as("both replicas indexed A's prompts")
                .isTrue();

        // B never saw them: in reverse order, each goes to the rank whose events hold it
        long hitsBefore = prefill.stats().prefixCacheHitTokens();
        for (int i = APPS.length - 1; i >= 0; i--) {
            HttpResponse<String> r = b.post("/v1/completions", completion(APPS[i], "a question for B"));
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        }
        List<Integer> all = ranks(prefill);
        for (int i = 0; i < APPS.length; i++) {
            assertThat(all.get(3 + (APPS.length - 1 - i))).as("B's %s", APPS[i]).isEqualTo(placedByA.get(i));
        }
        assertThat(b.metric("sluice_kv_view_decisions_total{source=\"kv_events\"}")).isEqualTo(3);
        assertThat(prefill.stats().prefixCacheHitTokens() - hitsBefore)
                .as("each of B's prompts found its system prompt on its rank").isGreaterThan(3 * 400);
    }

    private static String completion(String app, String user) {
        String system = ("You are a " + app + " for the Sluice project. ").repeat(40);
        return "{\"model\":\"sim-model\",\"max_tokens\":2,\"prompt\":\"" + system + user + "\"}";
    }

    private static String yaml(SimMode mode, SimCluster cluster) {
        StringBuilder y = new StringBuilder(PdTestbed.pairYaml(mode, cluster, TIMEOUTS));
        y.append("routing:\n  prefill: {policy: cache_aware}\n  kv_events:\n    endpoints:\n")
                .append(PdTestbed.kvEventEndpoints(cluster.prefillWorkers()));
        return y.toString();
    }

    /** Every DP rank's stream of the prefill has delivered a batch (the age is NaN before the first). */
    private static boolean heardEveryRank(PdTestbed bed) {
        List<Double> ages = bed.samples("sluice_kv_events_last_event_age_seconds{");
        return ages.size() == 4 && ages.stream().noneMatch(v -> v.isNaN());
    }

    private static boolean sameView(PdTestbed x, PdTestbed y) {
        List<Double> bx = x.samples("sluice_kv_index_blocks{");
        return !bx.isEmpty() && bx.get(0) > 0 && bx.equals(y.samples("sluice_kv_index_blocks{"));
    }

    /** The prefill ranks the gateway named, in the order the prefill took the requests. */
    private static List<Integer> ranks(SimWorker p) {
        return p.rankAssignments().stream().filter(r -> r.how() == RankAssignment.How.ROUTED)
                .map(RankAssignment::rank).toList();
    }
}
