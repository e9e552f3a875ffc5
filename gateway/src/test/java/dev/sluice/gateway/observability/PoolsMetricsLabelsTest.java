package dev.sluice.gateway.observability;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The real {@code /metrics} of a gateway with two model pools: OpenTelemetry's GenAI server metrics carry
 * each served request's pool, and what is refused before a pool is known (a malformed body, a body over
 * the HTTP layer's limit) carries {@code pool=""}; without {@code pools:} no series has a pool label.
 */
class PoolsMetricsLabelsTest {
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private HttpResponse<String> post(GatewayServer gw, String body) throws Exception {
        return http.send(PdTestbed.postRequest(URI.create("http://127.0.0.1:" + gw.port() + "/v1/chat/completions"),
                body), HttpResponse.BodyHandlers.ofString());
    }

    private static String chat(String model) {
        return "{\"model\":\"" + model + "\",\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    }

    private String metrics(GatewayServer gw) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw.adminPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    @Test
    void genAiMetricsAndHttpRefusalsCarryThePool() throws Exception {
        SimConfig sim = SimConfig.defaults().withHealthGeneration(false);
        try (SimCluster big = SimCluster.start(1, 1, 0, sim.withModel("big-model"), SimMode.SGLANG);
             SimCluster small = SimCluster.start(0, 1, 0, sim.withModel("small-model"), SimMode.UNIFIED)) {
            String yaml = "listen: {host: 127.0.0.1, port: 0}\nadmin: {port: 0}\nhealth: {interval: 200ms}\n"
                    + "http: {max_request_body: 4096}\npools:\n"
                    + "  - name: big\n    models: [big-model]\n    workers:\n"
                    + "      prefill: [{url: " + big.prefills().get(0).url() + ", bootstrap_port: "
                    + big.prefills().get(0).bootstrapPort() + "}]\n"
                    + "      decode: [{url: " + big.decodes().get(0).url() + "}]\n"
                    + "  - name: small\n    models: [small-model]\n    disaggregation: none\n"
                    + "    workers: {unified: [{url: " + small.unified().get(0).url() + "}]}\n";
            try (GatewayServer gw = PdTestbed.startGateway(yaml)) {
                assertThat(post(gw, chat("big-model")).statusCode()).isEqualTo(200);
                assertThat(post(gw, chat("big-model")).statusCode()).isEqualTo(200);
                assertThat(post(gw, chat("small-model").replaceFirst("\\{",
                        "{\"stream\":true,\"stream_options\":{\"include_usage\":true},")).statusCode()).isEqualTo(200);
                assertThat(post(gw, "{\"model\": \"big-model\", \"messages\": [").statusCode()).isEqualTo(400);
                assertThat(post(gw, "{\"model\":\"small-model\",\"x\":\"" + "a".repeat(8000) + "\"}").statusCode())
                        .isEqualTo(413);
                String m = metrics(gw);
                String chatOp = "gen_ai_operation_name=\"chat\"";
                for (String name : new String[]{"gen_ai_server_time_to_first_token_seconds_count",
                        "gen_ai_server_request_duration_seconds_count", "gen_ai_server_time_per_output_token_seconds_count"}) {
                    assertThat(value(m, name, chatOp + ",pool=\"big\"")).as(name + " of big").isEqualTo(2);
                    assertThat(value(m, name, chatOp + ",pool=\"small\"")).as(name + " of small").isEqualTo(1);
                }
                assertThat(value(m, "gen_ai_server_request_duration_seconds_count", chatOp + ",pool=\"\""))
                        .as("the malformed body and the one too large: before any pool").isEqualTo(2);
                assertThat(value(m, "sluice_http_rejections_total", "pool=\"\",reason=\"body_too_large\""))
                        .isEqualTo(1);
                assertThat(m).as("the HTTP layer's refusals are no pool's").doesNotContainPattern(
                        "sluice_http_rejections_total\\{pool=\"(big|small)\"");
                assertThat(m).doesNotContainPattern("(?m)^(gen_ai_|sluice_http_rejections)[a-z_]*\\{(?![^}]*pool=)");
            }
            // the same gateway without pools: the series as they always were, no pool label anywhere
            String one = "listen: {host: 127.0.0.1, port: 0}\nadmin: {port: 0}\nhealth: {interval: 200ms}\n"
                    + "http: {max_request_body: 4096}\nworkers:\n"
                    + "  prefill: [{url: " + big.prefills().get(0).url() + ", bootstrap_port: "
                    + big.prefills().get(0).bootstrapPort() + "}]\n"
                    + "  decode: [{url: " + big.decodes().get(0).url() + "}]\n";
            try (GatewayServer gw = PdTestbed.startGateway(one)) {
                assertThat(post(gw, chat("big-model")).statusCode()).isEqualTo(200);
                assertThat(post(gw, "{\"x\":\"" + "a".repeat(8000) + "\"}").statusCode()).isEqualTo(413);
                String m = metrics(gw);
                assertThat(value(m, "gen_ai_server_time_to_first_token_seconds_count", "gen_ai_operation_name=\"chat\""))
                        .isEqualTo(1);
                assertThat(value(m, "sluice_http_rejections_total", "reason=\"body_too_large\"")).isEqualTo(1);
                assertThat(m).doesNotContain("pool=");
            }
        }
    }

    /** The value of the one series {@code name{labels}} (labels in Prometheus' sorted order), or -1 when absent. */
    private static double value(String metrics, String name, String labels) {
        Matcher v = Pattern.compile("(?m)^" + Pattern.quote(name + "{" + labels) + ",?\\} ([0-9.eE+-]+)$")
                .matcher(metrics);
        return v.find() ? Double.parseDouble(v.group(1)) : -1;
    }
}
