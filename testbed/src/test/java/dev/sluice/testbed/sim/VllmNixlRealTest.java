package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.eventually;
import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.VllmLegs.COMPLETIONS;
import static dev.sluice.testbed.sim.VllmLegs.decodeLeg;
import static dev.sluice.testbed.sim.VllmLegs.prefillLeg;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** NixlConnector.request_finished as vLLM has it: EOS at the prefill's token, batches, a cancelled decode leg. */
class VllmNixlRealTest {
    private SimCluster cluster;
    private VllmPrefillServer prefill;
    private VllmDecodeServer decode;
    private final SimClient client = new SimClient();

    @BeforeEach
    void start() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2))
                .withVllmAbortTimeout(Duration.ofSeconds(60)), SimMode.VLLM);
        prefill = cluster.vllmPrefills().get(0);
        decode = cluster.vllmDecodes().get(0);
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    @Test
    void eosAtThePrefillsTokenAnswersStopWithNullParamsAndTheDecodeRecomputes() throws Exception {
        assertThat(client.postNow(prefill, "/sim/faults", json("{\"eosAtFirstToken\":true}")).statusCode())
                .isEqualTo(200);
        assertThat(prefill.faults().eosAtFirstToken()).isTrue();
        ObjectNode body = json("{\"prompt\":\"" + "p".repeat(200) + "\",\"max_tokens\":4}");
        HttpResponse<String> res = client.post(prefill, COMPLETIONS, prefillLeg(body), "X-Request-Id", "eos").get();
        assertThat(res.statusCode()).isEqualTo(200);
        JsonNode answer = json(res.body());
        assertThat(answer.at("/choices/0/finish_reason").asText()).isEqualTo("stop");
        assertThat(answer.has("kv_transfer_params")).isTrue();
        assertThat(answer.get("kv_transfer_params").isNull()).isTrue();
        assertThat(prefill.stats().heldKvRequests()).isZero();
        assertThat(prefill.stats().heldKvBlocks()).isZero();

        // the proxy sends the decode leg with what it got: no params, so the decode prefills itself
        ObjectNode leg = body.deepCopy();
        HttpResponse<String> d = client.post(decode, COMPLETIONS, leg, "X-Request-Id", "eos").get();
        assertThat(d.statusCode()).isEqualTo(200);
        assertThat(decode.stats().recomputedPrefills()).isEqualTo(1);
    }

    @Test
    void aBatchedPrefillLegReturnsTheFirstRequestsParamsAndHoldsEveryonesBlocks() throws Exception {
        ObjectNode body = json("{\"prompt\":[\"" + "a".repeat(100) + "\",\"" + "b".repeat(100) + "\"],\"max_tokens\":3}");
        HttpResponse<String> res = client.post(prefill, COMPLETIONS, prefillLeg(body), "X-Request-Id", "two").get();
        assertThat(res.statusCode()).isEqualTo(200);
        JsonNode answer = json(res.body());
        assertThat(answer.get("choices")).hasSize(2);
        JsonNode kv = answer.get("kv_transfer_params");
        assertThat(kv.get("remote_request_id").asText()).startsWith("cmpl-two-0-");
        assertThat(prefill.stats().heldKvRequests()).as("the second request's blocks strand").isEqualTo(2);
        HttpResponse<String> d = client.post(decode, COMPLETIONS, decodeLeg(json("{\"prompt\":\"" + "a".repeat(100)
                + "\",\"max_tokens\":3}"), kv), "X-Request-Id", "two").get();
        assertThat(d.statusCode()).isEqualTo(200);
        assertThat(eventually(Duration.ofSeconds(5), () -> prefill.stats().heldKvRequests() == 1)).isTrue();
    }

    @Test
    void cancellingADecodeLegThatWaitsForItsKvFreesThePrefillsBlocks() throws Exception {
        ObjectNode body = json("{\"prompt\":\"" + "c".repeat(400) + "\",\"max_tokens\":3}");
        HttpResponse<String> res = client.post(prefill, COMPLETIONS, prefillLeg(body), "X-Request-Id", "gone").get();
        JsonNode kv = json(res.body()).get("kv_transfer_params");
        assertThat(prefill.stats().heldKvRequests()).isEqualTo(1);
        assertThat(prefill.stats().heldKvBlocks()).isPositive();

        decode.faults().setStallAll(true); // the decode accepts the leg and has not read the KV yet
        byte[] leg = decodeLeg(body, kv).toString().getBytes(StandardCharsets.UTF_8);
        try (Socket s = new Socket(decode.host(), decode.port())) {
            OutputStream out = s.getOutputStream();
            out.write(("POST " + COMPLETIONS + " HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + leg.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(leg);
            out.flush();
            assertThat(eventually(Duration.ofSeconds(5), () -> decode.stats().running() == 1)).isTrue();
        } // the client cancels: the connection closes

        assertThat(eventually(Duration.ofSeconds(5), () -> decode.stats().aborted() == 1)).isTrue();
        assertThat(eventually(Duration.ofSeconds(5), () -> prefill.stats().heldKvRequests() == 0))
                .as("freed at once, not held for the 60 s abort timeout").isTrue();
        assertThat(prefill.stats().heldKvBlocks()).isZero();
        assertThat(prefill.stats().strandedKv()).isZero();
        assertThat(decode.stats().kvTransferFailures()).isZero();
    }
}
