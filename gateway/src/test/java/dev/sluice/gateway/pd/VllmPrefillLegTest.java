package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.gateway.api.GenerationRoute;
import dev.sluice.gateway.health.FailureKind;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * vLLM's prefill leg: what its answer hands the decode leg. The handoff runs against simulated vLLM
 * workers on loopback (the simulated decode refuses {@code kv_transfer_params} that are not a
 * prefill's own with a 400, so a 200 proves they went on intact); a malformed answer is driven
 * directly, as it fails before any decode leg exists.
 */
class VllmPrefillLegTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final String CHAT = "{\"model\":\"sim-model\",\"messages\":[{\"role\":\"user\",\"content\":"
            + "\"hello\"}],\"max_tokens\":4}";

    private AttemptHarness h;
    private SimCluster cluster;
    private Worker prefill;
    private Worker decode;

    @AfterEach
    void tearDown() throws Exception {
        try {
            assertThat(PdTestbed.eventually(WAIT, () -> prefill.inflight() == 0 && decode.inflight() == 0))
                    .as("in-flight counts back to zero").isTrue();
            h.close();
            h.assertAllReleased();
        } finally {
            if (cluster != null) {
                cluster.close();
            }
        }
    }

    private VllmAttempt sendToCluster(boolean eosAtFirstToken) throws Exception {
        h = AttemptHarness.live();
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false), SimMode.VLLM);
        SimWorker p = cluster.prefillWorkers().get(0);
        SimWorker d = cluster.decodeWorkers().get(0);
        p.faults().setEosAtFirstToken(eosAtFirstToken);
        prefill = AttemptHarness.worker(WorkerRole.PREFILL, p.port(), null);
        decode = AttemptHarness.worker(WorkerRole.DECODE, d.port(), null);
        VllmAttempt at = new VllmAttempt(h.scope(GenerationRoute.CHAT_COMPLETIONS, CHAT), new AttemptKey("v-rid", prefill, decode));
        assertThat(h.onLoop(at::send)).isTrue();
        assertThat(PdTestbed.eventually(WAIT, () -> h.events.ended() != null)).as("the response ended").isTrue();
        assertThat(h.events.names()).containsExactly("prefillSucceeded", "partEnded", "responseEnded");
        assertThat(h.events.ended()).isEqualTo("clean");
        assertThat(h.onLoop(() -> h.received().status)).isEqualTo(200);
        return at;
    }

    private JsonNode decodeLegBody() {
        List<RecordedRequest> posts = cluster.decodeWorkers().get(0).journal().stream()
                .filter(r -> r.path().equals("/v1/chat/completions")).toList();
        assertThat(posts).hasSize(1);
        return posts.get(0).body();
    }

    private double handoffs(String result) {
        return h.metrics.registry().find("sluice.vllm.handoffs").tag("result", result).counters().stream()
                .mapToDouble(c -> c.count()).sum();
    }

    @Test
    void thePrefillsKvTransferParamsAreHandedToTheDecodeLeg() throws Exception {
        sendToCluster(false);
        JsonNode params = decodeLegBody().get("kv_transfer_params");
        assertThat(params).isNotNull();
        assertThat(params.path("do_remote_prefill").asBoolean()).isTrue();
        assertThat(params.path("remote_engine_id").asText()).isNotEmpty();
        assertThat(handoffs("transferred")).isEqualTo(1);
        assertThat(handoffs("recomputed")).isZero();
    }

    @Test
    void noParamsBecauseTheFirstTokenEndedTheRequestSendsTheDecodeLegWithoutThem() throws Exception {
        sendToCluster(true);
        JsonNode params = decodeLegBody().get("kv_transfer_params");
        assertThat(params == null || params.isNull()).as("decode leg params: %s", params).isTrue();
        assertThat(handoffs("recomputed")).isEqualTo(1);
        assertThat(handoffs("transferred")).isZero();
    }

    private VllmPrefillLeg direct() {
        h = AttemptHarness.embedded();
        prefill = AttemptHarness.worker(WorkerRole.PREFILL, AttemptHarness.NOWHERE, null);
        decode = AttemptHarness.worker(WorkerRole.DECODE, AttemptHarness.NOWHERE, null);
        VllmAttempt at = new VllmAttempt(h.scope(GenerationRoute.CHAT_COMPLETIONS, CHAT), new AttemptKey("v-rid", prefill, decode));
        VllmPrefillLeg leg = new VllmPrefillLeg(at, at::prefillAnswered);
        prefill.acquired(); // what PdHalf.start does
        return leg;
    }

    @Test
    void paramsThatAreNotAnObjectAreAMalformedAnswerAndNoDecodeLegIsSent() {
        VllmPrefillLeg leg = direct();
        leg.onResponseHead(AttemptHarness.head(200, "application/json"));
        leg.onContent(h.last("{\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":\"length\"}],"
                + "\"kv_transfer_params\":\"not an object\"}"));
        assertThat(h.events.names()).containsExactly("failed", "partEnded");
        AttemptFailure f = h.events.failures("failed").get(0);
        assertThat(f.culprit()).isSameAs(prefill);
        assertThat(f.kind()).isEqualTo(FailureKind.SERVER_ERROR);
        assertThat(f.retryReason()).isNull();
        assertThat(f.error().message()).contains("kv_transfer_params is not an object");
        assertThat(decode.inflight()).as("no decode leg").isZero();
    }

    @Test
    void anErrorStatusFailsTheAttemptBeforeAnyDecodeLeg() {
        VllmPrefillLeg leg = direct();
        leg.onResponseHead(AttemptHarness.head(500, "application/json"));
        leg.onContent(h.last("{\"object\":\"error\",\"message\":\"EngineCore died\",\"code\":500}"));
        assertThat(h.events.names()).containsExactly("failed", "partEnded");
        assertThat(h.events.failures("failed").get(0).culprit()).isSameAs(prefill);
    }
}
