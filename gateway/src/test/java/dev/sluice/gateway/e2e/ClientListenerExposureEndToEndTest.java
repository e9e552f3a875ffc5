package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/**
 * By default the client listener keeps the operator's view to itself: no /metrics (worker
 * addresses, tenant names) and a /readiness that says ready or not with counts, never which
 * addresses; the admin listener serves both in full.
 */
class ClientListenerExposureEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void theClientListenerServesNoInternalsByDefault() throws Exception {
        try (PdTestbed bed = PdTestbed.start(dev.sluice.testbed.sim.SimMode.SGLANG, 1, 1, SimConfig.defaults(),
                "{connect: 2s}", "listen: {host: 127.0.0.1, port: 0}\n")) {
            String prefillAddress = URI.create(bed.prefill().url()).getAuthority();

            HttpResponse<String> metrics = bed.get("/metrics");
            assertThat(metrics.statusCode()).isEqualTo(404);
            assertThat(JSON.readTree(metrics.body()).at("/error/code").asText()).isEqualTo("not_found");
            assertThat(metrics.body()).doesNotContain("sluice_");

            HttpResponse<String> ready = bed.get("/readiness");
            assertThat(ready.statusCode()).isEqualTo(200);
            JsonNode r = JSON.readTree(ready.body());
            assertThat(r.get("status").asText()).isEqualTo("ready");
            assertThat(r.at("/usable/prefill/usable").asInt()).isEqualTo(1);
            assertThat(r.at("/usable/decode/total").asInt()).isEqualTo(1);
            assertThat(r.has("workers")).isFalse();
            assertThat(ready.body()).doesNotContain(prefillAddress).doesNotContain("127.0.0.1");

            HttpResponse<String> admin = bed.http.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + bed.gateway.adminPort() + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(admin.statusCode()).isEqualTo(200);
            assertThat(admin.body()).contains("sluice_requests_total").contains(prefillAddress);
            // the refused scrape is counted as what it was, not as a served request
            assertThat(admin.body()).containsPattern("sluice_requests_total\\{outcome=\"bad_request\",route=\"metrics\",?\\} 1\\.0");
        }
    }
}
