package dev.sluice.gateway.ops;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.SimConfig;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code scripts/diagnose} run as a real process against the real gateway in front of a simulated
 * 1P2D cluster: a decode whose scheduler hangs (it takes requests and never answers, its
 * {@code /health} still 200) must be named in the verdict as stalled and ejected, with exit 1; a
 * healthy cluster is "all healthy" with exit 0; a full GPU (a stand-in nvidia-smi) is named; no
 * gateway at all is exit 2.
 */
class DiagnoseScriptTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    // /health_generate every 300 ms (1.5 s timeout: SGLang answers it after its first 1 s poll): a hung decode is
    // ejected within a few seconds
    // and stays out while it hangs, so the script sees a steady state
    private static final String HEALTH = "health: {interval: 200ms, timeout: 500ms, generate_interval: 300ms,"
            + " generate_timeout: 1500ms}\n";
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 2s, request: 60s}";
    private static final String CHAT = "{\"model\":\"sim-model\",\"max_tokens\":4,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";
    private static final DateTimeFormatter HH_MM = DateTimeFormatter.ofPattern("HH:mm").withZone(ZoneOffset.UTC);

    @TempDir
    Path tmp;
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose(); // asserts: admission, in-flight counts and workers back to zero
        }
    }

    private void start() throws Exception {
        bed = PdTestbed.start(1, 2, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)), TIMEOUTS, HEALTH);
        for (int i = 0; i < 2; i++) {
            assertThat(bed.post("/v1/chat/completions", CHAT).statusCode()).isEqualTo(200);
        }
    }

    /** The script with the time zone pinned (UTC) and no nvidia-smi unless given. */
    private Shell.Result diagnose(Map<String, String> env, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("bash", Shell.root().resolve("scripts/diagnose").toString()));
        if (bed != null) {
            cmd.addAll(List.of("--admin", "http://127.0.0.1:" + bed.gateway.adminPort(),
                    "--gateway", "http://127.0.0.1:" + bed.port()));
        }
        cmd.addAll(List.of("--sample", "1s", "--units", "none"));
        cmd.addAll(List.of(args));
        Map<String, String> e = new HashMap<>(Map.of("TZ", "UTC", "NVIDIA_SMI",
                tmp.resolve("no-nvidia-smi").toString()));
        e.putAll(env);
        return Shell.run(e, cmd.toArray(String[]::new));
    }

    private Worker gatewayWorker(DecodeServer sim) {
        return bed.gateway.workers().all().stream().filter(w -> w.url().equals(sim.url())).findFirst().orElseThrow();
    }

    private static List<JsonNode> problems(JsonNode report) {
        return StreamSupport.stream(report.path("verdicts").spliterator(), false)
                .filter(v -> v.path("severity").asText().equals("problem")).toList();
    }

    @Test
    void aPairSuspectOfASilentStallIsNamedSuspectNotEjected() throws Exception {
        bed = PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)), TIMEOUTS, HEALTH);
        assertThat(bed.post("/v1/chat/completions", CHAT).statusCode()).isEqualTo(200);
        DecodeServer decode = bed.cluster.decodes().get(0);
        decode.faults().setKvStall(true); // transfers hang, both health checks pass
        assertThat(bed.post("/v1/chat/completions", CHAT).statusCode()).isEqualTo(504); // two stalls: confirmed
        Worker w = gatewayWorker(decode);
        assertThat(w.state()).isEqualTo(WorkerState.SUSPECT);

        Shell.Result json = diagnose(Map.of(), "--json");
        assertThat(json.exitCode()).as(json.toString()).isEqualTo(1);
        List<JsonNode> problems = problems(JSON.readTree(json.out()));
        JsonNode v = problems.stream().filter(p -> p.path("worker").asText().equals(w.name())).findFirst()
                .orElseThrow(() -> new AssertionError("no verdict on " + w.name() + ": " + json.out()));
        assertThat(v.path("kind").asText()).isEqualTo("worker_suspect");
        assertThat(v.path("cause").asText()).isEqualTo("suspect");
        assertThat(v.path("message").asText()).contains("suspect since").contains("no client request goes to it")
                .doesNotContain("ejected");
    }

    @Test
    void aHungDecodeIsNamedStalledAndEjectedWithItsTimeAndExit1() throws Exception {
        start();
        DecodeServer stuck = bed.cluster.decodes().get(0);
        DecodeServer good = bed.cluster.decodes().get(1);
        stuck.faults().setStallAll(true); // takes requests, never answers; /health still 200
        Worker w = gatewayWorker(stuck);
        assertThat(eventually(Duration.ofSeconds(10), () -> w.state() == WorkerState.EJECTED))
                .as("the gateway ejects the hung decode: %s", w.status()).isTrue();
        String since = HH_MM.format(w.status().since());
        // a log with one error line inside --since and one from two hours ago
        Instant now = Instant.now();
        Path log = tmp.resolve("gateway.log");
        Files.writeString(log, String.join("\n",
                now.minus(2, ChronoUnit.HOURS) + " ERROR [main] GatewayServer old trouble nobody needs now",
                now.minusSeconds(5) + " WARN  [sluice-control-4-1] HealthTable worker ejected role=decode worker="
                        + w.name() + " reason=\"active check\"",
                now.minusSeconds(4) + " INFO  [sluice-io-3-1] PdExchange request rid=x route=chat_completions "
                        + "status=200 outcome=ok", ""));

        Shell.Result text = diagnose(Map.of(), "--log", log.toString(), "--since", "10m");
        assertThat(text.exitCode()).as(text.toString()).isEqualTo(1);
        String out = text.out();
        String verdict = out.substring(0, out.indexOf("EVIDENCE"));
        assertThat(verdict).as(out).startsWith("VERDICT: 1 problem")
                .contains("decode worker " + w.name() + " stalled since " + since + " and ejected")
                .contains("GET /health_generate").contains("its /health answers 200 here")
                .doesNotContain(good.url().substring("http://".length())).doesNotContain("all healthy");
        String evidence = out.substring(out.indexOf("EVIDENCE"));
        assertThat(evidence).contains("-- services (systemd)", "-- gateway", "-- workers", "-- GPUs (nvidia-smi)",
                        "no nvidia-smi here", "-- logs", "ready yes")
                .containsPattern("decode +" + w.name().replace(".", "\\.") + " +ejected +" + since)
                .containsPattern("decode +" + good.url().substring(7).replace(".", "\\.") + " +healthy")
                .contains("worker ejected role=decode worker=" + w.name())
                .doesNotContain("old trouble").doesNotContain("outcome=ok");

        Shell.Result json = diagnose(Map.of(), "--json");
        assertThat(json.exitCode()).as(json.toString()).isEqualTo(1);
        JsonNode report = JSON.readTree(json.out());
        assertThat(report.path("status").asText()).isEqualTo("problems");
        assertThat(report.path("exit_code").asInt()).isEqualTo(1);
        List<JsonNode> problems = problems(report);
        assertThat(problems).as(json.out()).hasSize(1);
        JsonNode v = problems.get(0);
        assertThat(v.path("kind").asText()).isEqualTo("worker_ejected");
        assertThat(v.path("cause").asText()).isEqualTo("stalled");
        assertThat(v.path("role").asText()).isEqualTo("decode");
        assertThat(v.path("worker").asText()).isEqualTo(w.name());
        assertThat(v.path("since_local").asText()).isEqualTo(since);
        assertThat(Instant.parse(v.path("since").asText().replace("+00:00", "Z")))
                .isEqualTo(w.status().since().truncatedTo(ChronoUnit.SECONDS));
        assertThat(v.path("message").asText()).startsWith("decode worker " + w.name() + " stalled since " + since);
        JsonNode workers = report.at("/evidence/workers");
        assertThat(workers).hasSize(3);
        for (JsonNode x : workers) {
            assertThat(x.at("/health/status").asInt()).as("every /health answers, the hung one too: %s", x)
                    .isEqualTo(200);
            assertThat(x.path("state").asText()).isEqualTo(x.path("worker").asText().equals(w.name())
                    ? "ejected" : "healthy");
        }
    }

    @Test
    void aHealthyClusterIsAllHealthyWithExit0() throws Exception {
        start();
        Shell.Result text = diagnose(Map.of());
        assertThat(text.exitCode()).as(text.toString()).isZero();
        assertThat(text.out()).as(text.out()).startsWith("VERDICT: all healthy\n");
        assertThat(text.out()).doesNotContain("  ! ").contains("200 ready");

        Shell.Result json = diagnose(Map.of(), "--json");
        assertThat(json.exitCode()).as(json.toString()).isZero();
        JsonNode report = JSON.readTree(json.out());
        assertThat(report.path("status").asText()).isEqualTo("healthy");
        assertThat(problems(report)).isEmpty();
        assertThat(report.at("/evidence/readiness/body/status").asText()).isEqualTo("ready");
        assertThat(report.at("/evidence/workers")).hasSize(3)
                .allSatisfy(x -> assertThat(x.path("state").asText()).isEqualTo("healthy"));
        assertThat(report.at("/evidence/gpus/note").asText()).isEqualTo("no nvidia-smi here");
    }

    @Test
    void aFullGpuIsNamed() throws Exception {
        start();
        Path smi = tmp.resolve("nvidia-smi");
        Files.writeString(smi, "#!/bin/sh\n"
                + "[ \"$1\" = --query-gpu=index,memory.used,memory.total,utilization.gpu ] || exit 9\n"
                + "echo '0, 70000, 81559, 95'\necho '3, 81300, 81559, 100'\n");
        assertThat(smi.toFile().setExecutable(true)).isTrue();
        Shell.Result r = diagnose(Map.of("NVIDIA_SMI", smi.toString()));
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
        assertThat(r.out()).contains("VERDICT: 1 problem", "GPU 3 memory full: 81300 of 81559 MiB used (100%)",
                "GPU 0: 70000 of 81559 MiB (86%), utilization 95%").doesNotContain("GPU 0 memory full");
    }

    /** With pools, not ready names each pool that cannot serve, from /readiness's own reasons. */
    @Test
    void withPoolsNotReadyNamesEachPoolsReason() throws Exception {
        SimConfig sim = SimConfig.defaults().withHealthGeneration(false);
        try (dev.sluice.testbed.sim.SimCluster a = dev.sluice.testbed.sim.SimCluster.start(0, 1, 0,
                     sim.withModel("model-a"), dev.sluice.testbed.sim.SimMode.UNIFIED);
             dev.sluice.testbed.sim.SimCluster b = dev.sluice.testbed.sim.SimCluster.start(0, 1, 0,
                     sim.withModel("model-b"), dev.sluice.testbed.sim.SimMode.UNIFIED);
             dev.sluice.gateway.server.GatewayServer gw = PdTestbed.startGateway(
                     "listen: {host: 127.0.0.1, port: 0}\nadmin: {port: 0}\nhealth: {interval: 100ms}\npools:\n"
                             + "  - {name: a, models: [model-a], disaggregation: none, workers: {unified: [{url: "
                             + a.unified().get(0).url() + "}]}}\n"
                             + "  - {name: b, models: [model-b], disaggregation: none, workers: {unified: [{url: "
                             + b.unified().get(0).url() + "}]}}\n")) {
            a.unified().get(0).faults().setHealthStatus(503);
            b.unified().get(0).faults().setHealthStatus(503);
            java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
            assertThat(PdTestbed.eventually(Duration.ofSeconds(20), () -> { // 503 only once neither pool serves
                try {
                    return http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:"
                            + gw.port() + "/readiness")).build(), java.net.http.HttpResponse.BodyHandlers.ofString())
                            .statusCode() == 503;
                } catch (Exception e) {
                    return false;
                }
            })).isTrue();
            Shell.Result json = diagnose(Map.of(), "--admin", "http://127.0.0.1:" + gw.adminPort(),
                    "--gateway", "http://127.0.0.1:" + gw.port(), "--json");
            JsonNode report = JSON.readTree(json.out());
            assertThat(problems(report)).as(json.out()).anySatisfy(v -> assertThat(v.path("message").asText())
                    .contains("pool a: no usable unified worker (ejected)")
                    .contains("pool b: no usable unified worker (ejected)"));
            a.unified().get(0).faults().reset();
            b.unified().get(0).faults().reset();
        }
    }

    @Test
    void noGatewayIsExit2() throws Exception {
        int closed;
        try (ServerSocket s = new ServerSocket(0)) {
            closed = s.getLocalPort();
        }
        Shell.Result r = diagnose(Map.of(), "--admin", "http://127.0.0.1:" + closed, "--gateway",
                "http://127.0.0.1:" + closed, "--sample", "0");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.out()).contains("VERDICT: gateway unreachable", "http://127.0.0.1:" + closed + "/admin/state");
    }
}
