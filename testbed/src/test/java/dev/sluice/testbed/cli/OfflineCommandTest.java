package dev.sluice.testbed.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.testbed.TestbedMain;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code offline} on small load reports written here: the incident's burst, fallbacks, errors. */
class OfflineCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    @TempDir
    Path dir;
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        CommandLine cmd = new CommandLine(new TestbedMain());
        cmd.setOut(new PrintWriter(out));
        cmd.setErr(new PrintWriter(err));
        return cmd.execute(args);
    }

    /** 20 requests of 11,000 tokens at t = 0 (the incident's burst), SLO TTFT 30 s, 3 good in the run. */
    private ObjectNode burstReport(boolean perRequestSizes) {
        ObjectNode report = JSON.createObjectNode();
        report.put("label", "burst");
        ObjectNode config = report.putObject("config");
        config.put("prompt_tokens", 11_000);
        config.put("max_tokens", 128);
        config.put("slo_ttft_ms", 30_000);
        config.putNull("slo_e2e_ms");
        config.put("client_timeout_ms", 30_000);
        report.putObject("goodput").put("good_requests", 3);
        ArrayNode requests = report.putArray("requests");
        for (int i = 0; i < 20; i++) {
            ObjectNode r = requests.addObject();
            r.put("index", i);
            r.put("send_ms", 0.0);
            if (perRequestSizes) {
                r.put("prompt_tokens", 11_000);
                r.put("class", "burst");
                r.put("ttft_ms", 4_480.0 + 4_400.0 * i); // served in order: 80 ms after each prefill
            }
        }
        return report;
    }

    private File write(JsonNode report) throws IOException {
        File f = dir.resolve("run.json").toFile();
        JSON.writeValue(f, report);
        return f;
    }

    @Test
    void theIncidentBurstHasSixOnTimeAndTheRunIsHalfOfThat() throws IOException {
        File report = write(burstReport(true));
        File json = dir.resolve("offline.json").toFile();
        assertThat(run("offline", "--report", report.getPath(), "--prefill-tokens-per-second", "2500",
                "--overhead-ms", "50", "--json", json.getPath())).isZero();
        assertThat(out.toString()).contains("6 of 20 requests meet their SLOs").contains("greedy-optimal")
                .contains("by class: burst 6/20").contains("3 good = 50.0% of the offline schedule");
        JsonNode o = JSON.readTree(json);
        assertThat(o.get("good").asInt()).isEqualTo(6);
        assertThat(o.at("/good_by_class/burst").asInt()).isEqualTo(6);
        assertThat(o.get("method").asText()).isEqualTo("greedy-optimal");
        assertThat(o.get("upper_bound").asInt()).isEqualTo(6);
        assertThat(o.at("/run/ratio_to_offline").asDouble()).isEqualTo(0.5);
        assertThat(o.get("schedule")).hasSize(6);
        assertThat(o.at("/schedule/0/start_ms").asDouble()).isEqualTo(0);
        assertThat(o.at("/schedule/0/first_token_ms").asDouble()).isEqualTo(4_450);
        assertThat(o.at("/schedule/5/first_token_ms").asDouble()).isEqualTo(26_450);
        assertThat(o.at("/model/overhead_ms").asDouble()).isEqualTo(50);
        assertThat(o.at("/model/overhead_source").asText()).isEqualTo("--overhead-ms");
    }

    @Test
    void theOverheadIsEstimatedFromTheFastestTtft() throws IOException {
        File report = write(burstReport(true));
        File json = dir.resolve("offline.json").toFile();
        assertThat(run("offline", "--report", report.getPath(), "--prefill-tokens-per-second", "2500",
                "--json", json.getPath())).isZero();
        JsonNode o = JSON.readTree(json);
        assertThat(o.at("/model/overhead_ms").asDouble()).isEqualTo(80);
        assertThat(o.at("/model/overhead_source").asText()).startsWith("estimated");
        assertThat(o.get("good").asInt()).isEqualTo(6);
    }

    @Test
    void missingFieldsFallBackToTheConfigAndAnE2eObjectiveCounts() throws IOException {
        ObjectNode report = burstReport(false);
        File json = dir.resolve("offline.json").toFile();
        assertThat(run("offline", "--report", write(report).getPath(), "--prefill-tokens-per-second", "2500",
                "--json", json.getPath())).isZero();
        JsonNode o = JSON.readTree(json);
        assertThat(o.get("good").asInt()).isEqualTo(6);
        assertThat(o.at("/good_by_class/none").asInt()).isEqualTo(6);
        assertThat(o.at("/model/overhead_source").asText()).startsWith("default");
        // E2E 10 s, 127 tokens after the first at 20 ms: first token by 7.46 s, prefill by 7.41 s: one fits
        ((ObjectNode) report.get("config")).put("slo_e2e_ms", 10_000);
        assertThat(run("offline", "--report", write(report).getPath(), "--prefill-tokens-per-second", "2500",
                "--json", json.getPath())).isZero();
        assertThat(JSON.readTree(json).get("good").asInt()).isEqualTo(1);
    }

    @Test
    void aReportWithoutSendTimesIsRefusedClearly() throws IOException {
        ObjectNode report = burstReport(true);
        ((ObjectNode) report.get("requests").get(3)).remove("send_ms");
        assertThat(run("offline", "--report", write(report).getPath(), "--prefill-tokens-per-second", "2500"))
                .isEqualTo(2);
        assertThat(err.toString()).contains("requests[3].send_ms: missing");
        assertThat(run("offline", "--report", write(burstReport(true)).getPath(), "--prefill-tokens-per-second", "0"))
                .isEqualTo(2);
        assertThat(err.toString()).contains("--prefill-tokens-per-second: 0.0 (expected: > 0)");
    }
}
