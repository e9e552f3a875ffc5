package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.GatewayMain;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.SimWorker;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The only pair stalls silently (both health checks pass: the simulator's kvStall, whose transfer
 * never ends while SGLang's own checks take the fake bootstrap path, docs/simulator-sources.md; or
 * a vLLM decode that parks every request while its /health answers). After the verdict
 * (health.stall_panic) no client request reaches the pair: 30 sequential and then 30 concurrent
 * clients each get a 503 at once, with a Retry-After no shorter than the next probe; the gateway
 * probes the pair with its own one-token generation through both halves, spaced by the back-off;
 * the first probe that succeeds after the pair heals puts it back, within the probe cap.
 */
class StallPanicEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String STREAM = "{\"model\":\"sim-model\",\"max_tokens\":4,\"stream\":true,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";
    private static final String PROBE_RID = "sluice-probe-";

    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: admission, in-flight counts and workers back to zero
        }
    }

    private HttpResponse<String> ask() throws Exception {
        return bed.post("/v1/chat/completions", STREAM);
    }

    /** Generation requests {@code w} received since {@code sinceNanos}: the gateway's probes, or its clients'. */
    private static List<RecordedRequest> generations(SimWorker w, long sinceNanos, boolean probes) {
        List<RecordedRequest> out = new ArrayList<>();
        for (RecordedRequest r : w.journal()) {
            boolean generation = r.method().equals("POST") && (r.path().startsWith("/v1/") || r.path().equals("/generate"));
            if (generation && r.receivedNanos() >= sinceNanos
                    && r.header("X-Request-Id").orElse("").startsWith(PROBE_RID) == probes) {
                out.add(r);
            }
        }
        return out;
    }

    /** A refusal of the panic mode, checked; returns its Retry-After in seconds. */
    private static long refusedFast(HttpResponse<String> r, long tookNanos, List<Long> latencies) throws Exception {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
        JsonNode error = JSON.readTree(r.body()).path("error");
        assertThat(error.path("code").asText()).isEqualTo("worker_suspect");
        assertThat(error.path("type").asText()).isEqualTo("server_error");
        assertThat(error.path("message").asText()).contains("health.stall_panic").contains("probe");
        assertThat(r.headers().firstValue("X-Sluice-Reject-Reason").orElse("worker_suspect")).isEqualTo("worker_suspect");
        // generous: a refusal that waited out a watchdog would take seconds (the goal, 50 ms, is measured by
        // scripts/bench-stall-panic on a quiet machine)
        assertThat(tookNanos).as("refused at once").isLessThan(1_000_000_000L);
        latencies.add(tookNanos);
        return Long.parseLong(r.headers().firstValue("Retry-After").orElseThrow());
    }

    @Test
    void sglangPairStallingSilentlyIsProbedByTheGatewaySpacedByTheBackOffWhileEveryClientGetsAFast503()
            throws Exception {
        // probes: first 400 ms after the verdict, then start to start 800 ms, then 1600 ms (the cap)
        bed = PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5)),
                "{first_token: 60s, request: 120s}", "health: {interval: 200ms, timeout: 500ms, "
                        + "watchdog: {prefill_floor: 1s}, stall_panic: {probe_timeout: 300ms, probe_interval: 400ms, "
                        + "probe_max_interval: 1600ms}}\n");
        SimWorker prefill = bed.prefill();
        SimWorker decode = bed.decode();
        Worker d = bed.gateway.workers().decode().get(0);
        assertThat(ask().statusCode()).isEqualTo(200);

        decode.faults().setKvStall(true);
        HttpResponse<String> first = ask(); // it finds the stall: two attempts, each caught by the watchdog
        assertThat(first.statusCode()).isEqualTo(504);
        long verdict = System.nanoTime();
        assertThat(d.state()).isEqualTo(WorkerState.SUSPECT);
        assertThat(bed.gateway.workers().prefill().get(0).state()).as("nobody can tell whose stall it is")
                .isEqualTo(WorkerState.SUSPECT);
        assertThat(bed.get("/readiness").statusCode()).isEqualTo(503);

        List<Long> latencies = new ArrayList<>();
        List<long[]> told = new ArrayList<>(); // {answered at, Retry-After s}
        for (int i = 0; i < 30; i++) {
            long start = System.nanoTime();
            HttpResponse<String> r = ask();
            long end = System.nanoTime();
            told.add(new long[] {end, refusedFast(r, end - start, latencies)});
        }
        System.out.printf("stall panic sequential refusals (ms): %s%n", latencies.stream().map(n -> n / 1_000_000)
                .toList());
        List<CompletableFuture<HttpResponse<String>>> burst = new ArrayList<>();
        long burstStart = System.nanoTime();
        for (int i = 0; i < 30; i++) {
            burst.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/v1/chat/completions"), STREAM),
                    HttpResponse.BodyHandlers.ofString()));
        }
        for (CompletableFuture<HttpResponse<String>> f : burst) {
            HttpResponse<String> r = f.get();
            long end = System.nanoTime();
            told.add(new long[] {end, refusedFast(r, end - burstStart, latencies)});
        }
        latencies.sort(null);
        System.out.printf("stall panic refusals: n=%d p50=%.1f ms max=%.1f ms%n", latencies.size(),
                latencies.get(latencies.size() / 2) / 1e6, latencies.get(latencies.size() - 1) / 1e6);

        // admin state and the status command show the suspect pair and its next probe
        JsonNode state = JSON.readTree(bed.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + bed.gateway.adminPort() + "/admin/state")).build(), HttpResponse.BodyHandlers.ofString()).body());
        JsonNode dj = state.path("workers").findParents("role").stream()
                .filter(w -> w.path("role").asText().equals("decode")).findFirst().orElseThrow();
        assertThat(dj.path("state").asText()).isEqualTo("suspect");
        assertThat(dj.path("stall_probe").path("running").isBoolean()).isTrue();
        StringWriter out = new StringWriter();
        CommandLine cli = new CommandLine(new GatewayMain());
        cli.setOut(new PrintWriter(out));
        assertThat(cli.execute("status", "--once", "--admin", "http://127.0.0.1:" + bed.gateway.adminPort())).isZero();
        assertThat(out.toString()).contains("SUSPECT, no client request goes to it");

        // let the back-off reach its cap: 5 probes (0.4, +0.8, +1.6, +1.6, +1.6 s)
        assertThat(PdTestbed.eventually(Duration.ofSeconds(15), () -> generations(decode, verdict, true).size() >= 5))
                .isTrue();
        List<RecordedRequest> probes = generations(decode, verdict, true);
        assertThat(generations(decode, verdict, false)).as("no client request reached the decode while suspect")
                .isEmpty();
        assertThat(generations(prefill, verdict, false)).as("nor the prefill").isEmpty();
        assertThat(generations(prefill, verdict, true)).as("each probe went through both halves")
                .hasSizeGreaterThanOrEqualTo(probes.size() - 1);
        JsonNode body = probes.get(0).body();
        assertThat(body.path("max_tokens").asInt()).isEqualTo(1);
        assertThat(body.path("model").asText()).as("the model clients ask for").isEqualTo("sim-model");
        assertThat(body.has("bootstrap_room")).as("a real PD request: bootstrap fields").isTrue();
        // spacing, start to start, against the back-off: [0.8 x, 1 x] of 400 ms x 2^n capped at 1600 ms, with
        // generous margins: arrival at the simulator varies with connection set-up (an aborted probe's
        // connection is closed, the next opens one), the 50 ms probe rounds, and a shared machine
        long[] backoffMs = {800, 1600, 1600, 1600};
        for (int i = 1; i < Math.min(probes.size(), 5); i++) {
            long gapMs = (probes.get(i).receivedNanos() - probes.get(i - 1).receivedNanos()) / 1_000_000;
            assertThat(gapMs).as("probe gap %d", i).isBetween((long) (0.8 * backoffMs[i - 1]) - 150,
                    backoffMs[i - 1] + 400);
        }
        long firstMs = (probes.get(0).receivedNanos() - verdict) / 1_000_000;
        assertThat(firstMs).as("first probe after the verdict").isBetween(0L, 400L + 400);
        // every refusal's Retry-After reached at least to the next probe's start
        for (long[] t : told) {
            long next = probes.stream().mapToLong(RecordedRequest::receivedNanos).filter(n -> n > t[0]).findFirst()
                    .orElse(Long.MAX_VALUE);
            if (next != Long.MAX_VALUE) {
                assertThat(t[0] + t[1] * 1_000_000_000L + 100_000_000L).as("Retry-After %d s", t[1])
                        .isGreaterThanOrEqualTo(next);
            }
        }

        // the pair heals while the back-off is at its cap: served again within it (1.6 s) plus a probe's time
        decode.faults().setKvStall(false);
        long healed = System.nanoTime();
        assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> d.state() == WorkerState.HEALTHY)).isTrue();
        long servedMs = (System.nanoTime() - healed) / 1_000_000;
        System.out.printf("stall panic: healed pair back in rotation after %d ms (probe cap 1600 ms)%n", servedMs);
        assertThat(servedMs).isLessThan(1600 + 300 + 1000);
        assertThat(ask().statusCode()).isEqualTo(200);
        assertThat(bed.get("/readiness").statusCode()).isEqualTo(200);
        String workerLabel = "role=\"decode\",worker=\"" + d.name() + "\"";
        assertThat(bed.metric("sluice_stall_probes_total{result=\"success\"," + workerLabel + "}")).isEqualTo(1.0);
        assertThat(bed.metric("sluice_stall_probes_total{result=\"timeout\"," + workerLabel + "}"))
                .isGreaterThanOrEqualTo(5.0);
        assertThat(bed.metric("sluice_rejections_total{reason=\"worker_suspect\"}")).isEqualTo(60.0);
    }

    @Test
    void vllmDecodeStallingSilentlyIsProbedWithKvTransferParamsAndServesAgainWithinTheDefaultCap() throws Exception {
        // default probing (1 s, doubling, 10 s cap, 3 s timeout); a faster watchdog to find the stall
        bed = PdTestbed.start(SimMode.VLLM, 1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5)),
                "{first_token: 60s, request: 120s}", "health: {interval: 200ms, timeout: 500ms, "
                        + "watchdog: {first_token_after_prefill: 1s}}\n");
        SimWorker prefill = bed.cluster.prefillWorkers().get(0);
        SimWorker decode = bed.cluster.decodeWorkers().get(0);
        Worker d = bed.gateway.workers().decode().get(0);
        assertThat(ask().statusCode()).isEqualTo(200);

        decode.faults().setStallAll(true); // vLLM has no /health_generate: its /health still passes
        assertThat(ask().statusCode()).isEqualTo(504);
        long verdict = System.nanoTime();
        assertThat(d.state()).isEqualTo(WorkerState.SUSPECT);

        List<Long> latencies = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            long start = System.nanoTime();
            HttpResponse<String> r = ask();
            long retryAfter = refusedFast(r, System.nanoTime() - start, latencies);
            assertThat(retryAfter).as("at most the cap plus a probe's time").isBetween(1L, 13L);
        }
        assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> !generations(decode, verdict, true).isEmpty()))
                .isTrue();
        assertThat(generations(decode, verdict, false)).as("no client request reached the decode").isEmpty();
        RecordedRequest leg = generations(prefill, verdict, true).get(0);
        assertThat(leg.body().path("kv_transfer_params").path("do_remote_decode").asBoolean())
                .as("the probe's prefill leg asks for a remote decode, as a client's does").isTrue();

        decode.faults().setStallAll(false);
        long healed = System.nanoTime();
        assertThat(PdTestbed.eventually(Duration.ofSeconds(14), () -> d.state() == WorkerState.HEALTHY)).isTrue();
        long servedMs = (System.nanoTime() - healed) / 1_000_000;
        System.out.printf("stall panic (vllm, defaults): back in rotation after %d ms%n", servedMs);
        assertThat(servedMs).as("within the 10 s cap (plus a probe's time)").isLessThan(10_000 + 3_000 + 1_000);
        assertThat(ask().statusCode()).isEqualTo(200);
    }
}
