package dev.sluice.gateway.ops;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code scripts/diagnose} as an operator runs it, against a gateway in front of the simulated
 * cluster: a stalled decode is named in the verdict, a healthy cluster says so.
 */
class DiagnoseScriptTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String HEALTH = "health: {interval: 200ms, timeout: 500ms, generate_interval: 0s,"
            + " passive: {consecutive_failures: 2, base_ejection: 60s},"
            + " watchdog: {prefill_floor: 2s, first_token_after_prefill: 500ms}}\n"
            + "retries: {max_retries: 2, backoff_base: 10ms}\n";
    private static final String STREAM = "{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":8,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose();
        }
    }

    private Shell.Result diagnose(String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of("--admin", "http://127.0.0.1:" + bed.gateway.adminPort(),
                "--gateway", "http://127.0.0.1:" + bed.port(), "--interval", "1"));
        args.addAll(List.of(extra));
        return Shell.script(Map.of(), "diagnose", args.toArray(String[]::new));
    }

    @Test
    void aHealthyClusterIsSaidToBeHealthy() throws Exception {
        bed = PdTestbed.start(1, 2, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5)),
                "{connect: 1s, first_token: 20s, idle_stream: 2s}", HEALTH);
        Shell.Result r = diagnose();
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.out()).startsWith("VERDICT\n  - all healthy");
    }

    @Test
    void aStalledDecodeIsNamedFirst() throws Exception {
        bed = PdTestbed.start(1, 2, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5))
                .withKvWait(Duration.ofSeconds(30)), "{connect: 1s, first_token: 20s, idle_stream: 2s}", HEALTH);
        DecodeServer stuck = bed.cluster.decodes().get(0);
        stuck.faults().setStallAfterTokens(0); // takes the KV, never emits a token; its /health stays 200
        List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            calls.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/v1/chat/completions"), STREAM),
                    HttpResponse.BodyHandlers.ofString()));
        }
        for (CompletableFuture<HttpResponse<String>> c : calls) {
            assertThat(c.get().statusCode()).isEqualTo(200); // retried on the good decode
        }
        Worker w = bed.gateway.workers().decode().stream().filter(x -> x.url().equals(stuck.url())).findFirst()
                .orElseThrow();
        assertThat(w.state()).isEqualTo(WorkerState.EJECTED);

        Shell.Result json = diagnose("--json");
        assertThat(json.exitCode()).as(json.toString()).isEqualTo(1);
        JsonNode report = JSON.readTree(json.out());
        String first = report.path("verdict").get(0).asText();
        assertThat(first).startsWith("decode worker " + w.name() + " stalled since ").contains("and ejected")
                .contains("stall");
        assertThat(report.path("evidence").path("workers").toString()).contains(w.name());

        Shell.Result plain = diagnose();
        assertThat(plain.exitCode()).isEqualTo(1);
        assertThat(plain.out()).startsWith("VERDICT\n  - decode worker " + w.name() + " stalled since ")
                .contains("EVIDENCE");
        stuck.faults().reset();
    }
}
