package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.health.WorkerIdentityProbe;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A worker reporting a release outside the covered ones (SGLang's /server_info {@code version}, vLLM's
 * /version): still used, with a warning in its identity (/admin/state) and one WARN line per worker naming
 * the version and the covered range. A covered release gets none.
 */
class WorkerVersionEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TIMEOUTS = "{connect: 1s, first_token: 20s, idle_stream: 10s}";
    private PdTestbed bed;
    private final Logger logger = (Logger) LoggerFactory.getLogger(WorkerIdentityProbe.class);
    private final ListAppender<ILoggingEvent> lines = new ListAppender<>();

    @BeforeEach
    void listen() {
        lines.start();
        logger.addAppender(lines);
    }

    @AfterEach
    void close() throws Exception {
        logger.detachAppender(lines);
        if (bed != null) {
            bed.healAndClose();
        }
    }

    private long warningsNaming(String version, Worker w) {
        return lines.list.stream().filter(e -> e.getLevel() == Level.WARN)
                .map(ILoggingEvent::getFormattedMessage)
                .filter(m -> m.contains("worker=" + w.name() + " ") && m.contains("version " + version)).count();
    }

    private JsonNode adminState() throws Exception {
        return JSON.readTree(bed.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + bed.gateway.adminPort() + "/admin/state")).build(), HttpResponse.BodyHandlers.ofString()).body());
    }

    @Test
    void anSglangReleaseOutsideTheRangeIsUsedAndWarnedOncePerWorker() throws Exception {
        bed = PdTestbed.start(SimMode.SGLANG, 1, 1, SimConfig.defaults().withServerVersion("0.4.10.post2"), TIMEOUTS,
                "");
        Worker prefill = bed.gateway.workers().prefill().get(0);
        Worker decode = bed.gateway.workers().decode().get(0);
        assertThat(eventually(Duration.ofSeconds(10), () -> !prefill.identity().warnings().isEmpty()
                && !decode.identity().warnings().isEmpty())).isTrue();
        assertThat(prefill.identity().version()).isEqualTo("0.4.10.post2");
        assertThat(prefill.identity().warnings()).singleElement().asString()
                .contains("0.4.10.post2").contains("SGLang 0.5.0 up to (not including) 0.6.0");
        assertThat(prefill.identity().misconfigured()).isFalse();
        assertThat(bed.post("/generate", "{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":2}}").statusCode())
                .isEqualTo(200);
        JsonNode identity = adminState().path("workers").get(0).path("identity");
        assertThat(identity.path("version").asText()).isEqualTo("0.4.10.post2");
        assertThat(identity.path("warnings").get(0).asText()).contains("outside the releases");
        assertThat(warningsNaming("0.4.10.post2", prefill)).isEqualTo(1);
        assertThat(warningsNaming("0.4.10.post2", decode)).isEqualTo(1);
    }

    @Test
    void vllmsVersionComesFromItsVersionRoute() throws Exception {
        bed = PdTestbed.start(SimMode.VLLM, 1, 1, SimConfig.defaults().withServerVersion("0.9.2"), TIMEOUTS, "");
        Worker prefill = bed.gateway.workers().prefill().get(0);
        assertThat(eventually(Duration.ofSeconds(10), () -> prefill.identity().version().equals("0.9.2"))).isTrue();
        assertThat(prefill.identity().server()).isEqualTo("vllm");
        assertThat(prefill.identity().warnings()).singleElement().asString()
                .contains("vLLM 0.11.0 up to (not including) 0.23.0");
        assertThat(warningsNaming("0.9.2", prefill)).isEqualTo(1);
    }

    @Test
    void aCoveredReleaseIsNoWarning() throws Exception {
        bed = PdTestbed.start(SimMode.SGLANG, 1, 1, SimConfig.defaults().withServerVersion("0.5.6.post2"), TIMEOUTS, "");
        Worker prefill = bed.gateway.workers().prefill().get(0);
        assertThat(eventually(Duration.ofSeconds(10), () -> prefill.identity().version().equals("0.5.6.post2")))
                .isTrue();
        assertThat(prefill.identity().warnings()).isEmpty();
    }
}
