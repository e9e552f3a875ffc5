package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.routing.WorkerTelemetry.Field;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The gateway against simulated workers that behave like the current real servers, one test per
 * finding of docs/compatibility.md (the row numbers below). Each simulated behaviour cites its
 * upstream source in the testbed (docs/simulator-sources.md).
 */
class RealServerConformanceEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 10s}";
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: admission, in-flight counts and workers back to zero
        }
    }

    private static String generate(String text, boolean stream, int tokens) {
        return "{\"text\":\"" + text + "\",\"stream\":" + stream + ",\"sampling_params\":{\"max_new_tokens\":" + tokens
                + "}}";
    }

    /** Row 1: SGLang's default /health (a generation, >= 1 s) against the gateway's shipped health defaults. */
    @Test
    void aDefaultSglangBecomesReadyWithTheShippedHealthDefaultsAndStaysReady() throws Exception {
        long started = System.nanoTime();
        // the sim's defaults are SGLang's: /health generates and answers after its first 1 s poll; the health
        // section restates the shipped interval (the harness's own is 200 ms); the timeouts are the shipped 25 s
        bed = PdTestbed.startAsIs(SimMode.SGLANG, 1, 1, SimConfig.defaults(), TIMEOUTS, "health: {interval: 2s}\n");
        double readyAfter = (System.nanoTime() - started) / 1e9;
        assertThat(readyAfter).as("ready within 20 s").isLessThan(20);
        long firstHealth = healthChecks(bed.prefill());
        assertThat(firstHealth).isPositive();
        for (int i = 1; i <= 3; i++) { // three more checks at least, each taking >= 1 s, all passing
            // the checker sends a worker's next /health only once the previous one answered: when check
            // firstHealth + i + 1 has arrived, check firstHealth + i is over
            long arrived = firstHealth + i + 1;
            assertThat(eventually(Duration.ofSeconds(15), () -> healthChecks(bed.prefill()) >= arrived
                    && healthChecks(bed.decode()) >= arrived)).as("health check %d", i).isTrue();
            assertThat(bed.get("/readiness").statusCode()).isEqualTo(200);
        }
        assertThat(bed.gateway.workers().all()).allMatch(w -> w.state() == WorkerState.HEALTHY);
        assertThat(bed.post("/generate", generate("hello", false, 4)).statusCode()).isEqualTo(200);
    }

    private static long healthChecks(SimWorker worker) {
        return worker.journal().stream().filter(r -> r.path().equals("/health")).count();
    }

    /** Row 7: a DP=2 decode whose ranks each report 60% KV usage is at 60%, not 120%: it takes traffic. */
    @Test
    void aDataParallelDecodeIsReadPerRank() throws Exception {
        bed = PdTestbed.start(SimMode.SGLANG, 1, 1, SimConfig.defaults().withDpSize(2), TIMEOUTS, "");
        bed.decode().faults().setTokenUsage(0.6);
        Worker decode = bed.gateway.workers().decode().get(0);
        assertThat(eventually(Duration.ofSeconds(5), () -> decode.telemetry().value(Field.TOKEN_USAGE,
                System.nanoTime(), Long.MAX_VALUE) == 0.6)).isTrue();
        assertThat(decode.state()).isEqualTo(WorkerState.HEALTHY);
        assertThat(bed.post("/generate", generate("hello", true, 3)).statusCode()).isEqualTo(200);
        // counts add up over the ranks: the /v1/loads answer has one entry per rank
        assertThat(decode.telemetry().value(Field.LOAD_WAITING_REQUESTS, System.nanoTime(), Long.MAX_VALUE)).isZero();
    }

    /** Row 4: a context-length error in a /generate stream is the client's 400; nothing is ejected. */
    @Test
    void aContextLengthErrorInAStreamIsTheClientsBadRequest() throws Exception {
        bed = PdTestbed.start(SimMode.SGLANG, 1, 1, SimConfig.defaults().withContextLength(64), TIMEOUTS, "");
        String longPrompt = "word ".repeat(400).trim();
        for (int i = 0; i < 4; i++) { // more than health.passive.consecutive_failures: none of them counts
            HttpResponse<String> r = bed.post("/generate", generate(longPrompt, true, 4));
            assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
            JsonNode error = JSON.readTree(r.body()).path("error");
            assertThat(error.path("message").asText()).contains("context length");
            assertThat(error.path("type").asText()).isEqualTo("invalid_request_error");
        }
        HttpResponse<String> whole = bed.post("/generate", generate(longPrompt, false, 4));
        assertThat(whole.statusCode()).isEqualTo(400);
        assertThat(bed.gateway.workers().all()).allMatch(w -> w.state() == WorkerState.HEALTHY);
        assertThat(bed.metric("sluice_requests_total{outcome=\"bad_request\",route=\"generate\"}")).isEqualTo(5);
        assertThat(bed.post("/generate", generate("hello", true, 3)).statusCode()).isEqualTo(200);
    }

    /** Rows 5 and 6: a KV transfer failure ends SGLang's stream with an abort finish reason, in SGLang's words. */
    @Test
    void aKvTransferAbortInAStreamIsAWorkerFailureNotASuccess() throws Exception {
        bed = PdTestbed.start(SimMode.SGLANG, 1, 1, SimConfig.defaults(), TIMEOUTS, "retries: {max_retries: 0}\n");
        bed.decode().faults().setKvFailFraction(1.0);
        HttpResponse<String> r = bed.post("/generate", generate("hello", true, 3));
        assertThat(r.statusCode()).as(r.body()).isGreaterThanOrEqualTo(500);
        assertThat(r.body()).contains("transfer failed");
        // whichever half reports it first (the decode's "Decode transfer failed", the prefill's "Prefill transfer
        // failed") is counted against its worker
        double kv = 0;
        for (Worker w : bed.gateway.workers().all()) {
            kv += bed.metric("sluice_kv_transfer_failures_total{worker=\"" + w.name() + "\"}");
        }
        assertThat(kv).isPositive();
        bed.decode().faults().setKvFailFraction(0);
    }

    /** Rows 8 and 9: no --enable-metrics: the queue still comes from /v1/loads; no deprecated route is used. */
    @Test
    void withoutMetricsTheLoadsStillCountAndNoDeprecatedRouteIsCalled() throws Exception {
        bed = PdTestbed.start(SimMode.SGLANG, 1, 1, SimConfig.defaults().withEnableMetrics(false), TIMEOUTS, "");
        Worker prefill = bed.gateway.workers().prefill().get(0);
        assertThat(eventually(Duration.ofSeconds(5), () -> !Double.isNaN(prefill.telemetry().value(
                Field.LOAD_WAITING_REQUESTS, System.nanoTime(), Long.MAX_VALUE)))).isTrue();
        assertThat(eventually(Duration.ofSeconds(5), () -> !prefill.identity().warnings().isEmpty())).isTrue();
        assertThat(prefill.identity().warnings().get(0)).contains("--enable-metrics");
        assertThat(bed.post("/generate", generate("hello", false, 2)).statusCode()).isEqualTo(200);
        assertThat(bed.get("/get_server_info").statusCode()).isEqualTo(200); // a client's call is its own
        long deprecated = bed.prefill().stats().deprecatedCalls() + bed.decode().stats().deprecatedCalls();
        assertThat(deprecated).as("only the client's /get_server_info").isEqualTo(1);
    }

    /** Row 2 (and 3 for vLLM): n > 1 is refused with a 400 naming the limit; no worker sees it. */
    @Test
    void parallelSamplingIsRefusedInPdModeWithTheReason() throws Exception {
        bed = PdTestbed.start(SimMode.SGLANG, 1, 1, SimConfig.defaults(), TIMEOUTS, "");
        bed.prefill().clear();
        HttpResponse<String> r = bed.post("/v1/chat/completions", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
                + "\"content\":\"hi\"}],\"n\":2,\"max_tokens\":3}");
        assertThat(r.statusCode()).isEqualTo(400);
        JsonNode error = JSON.readTree(r.body()).path("error");
        assertThat(error.path("code").asText()).isEqualTo("unsupported_parameter");
        assertThat(error.path("param").asText()).isEqualTo("n");
        assertThat(bed.prefill().journal()).noneMatch(q -> q.path().equals("/v1/chat/completions"));
        // row 15: what the servers accept passes: a 64-bit seed, a one-element list prompt (a batch of one)
        HttpResponse<String> ok = bed.post("/v1/completions", "{\"model\":\"m\",\"prompt\":[\"hi\"],\"max_tokens\":2,"
                + "\"seed\":9007199254740993}");
        assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
    }

    /** Row 12: vLLM's prefill answering kv_transfer_params null (EOS at its one token): the decode recomputes. */
    @Test
    void aVllmPrefillWithoutParamsLetsTheDecodeRecompute() throws Exception {
        bed = PdTestbed.start(SimMode.VLLM, 1, 1, SimConfig.defaults(), TIMEOUTS, "");
        bed.cluster.prefillWorkers().get(0).faults().setEosAtFirstToken(true);
        HttpResponse<String> r = bed.post("/v1/completions", "{\"model\":\"m\",\"prompt\":\"hello\",\"max_tokens\":4}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(bed.cluster.decodeWorkers().get(0).stats().recomputedPrefills()).isEqualTo(1);
        assertThat(bed.metric("sluice_vllm_handoffs_total{result=\"recomputed\"}")).isEqualTo(1);
        assertThat(bed.gateway.workers().all()).allMatch(w -> w.state() == WorkerState.HEALTHY);
        bed.cluster.prefillWorkers().get(0).faults().setEosAtFirstToken(false);
        // rows 3 and 15: n > 1 and a list of prompts are refused in vLLM mode, with the reason
        HttpResponse<String> list = bed.post("/v1/completions", "{\"model\":\"m\",\"prompt\":[\"a\",\"b\"],"
                + "\"max_tokens\":2}");
        assertThat(list.statusCode()).isEqualTo(400);
        assertThat(list.body()).contains("kv_transfer_params of the first prompt only");
        HttpResponse<String> n = bed.post("/v1/completions", "{\"model\":\"m\",\"prompt\":\"a\",\"n\":3,\"max_tokens\":2}");
        assertThat(n.statusCode()).isEqualTo(400);
    }
}
