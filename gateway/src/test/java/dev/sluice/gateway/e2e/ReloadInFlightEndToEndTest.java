package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A reload that changes what requests in flight were admitted under: they finish, and their log
 * line still names what they were admitted with.
 */
class ReloadInFlightEndToEndTest {

    @Test
    void aReloadThatDropsARequestsPriorityClassLetsItEndWithItsLogLine() throws Exception {
        Logger exchangeLog = (Logger) LoggerFactory.getLogger("dev.sluice.gateway.pd.RequestLog");
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        exchangeLog.addAppender(lines);
        try (PdTestbed bed = PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(20)),
                "{first_token: 10s, request: 30s}", "admission: {priorities: [urgent, normal, low], "
                        + "default_priority: normal}\n")) {
            HttpRequest req = HttpRequest.newBuilder(bed.uri("/v1/completions"))
                    .header("Content-Type", "application/json").header("X-Sluice-Priority", "low")
                    .POST(HttpRequest.BodyPublishers.ofString(
                            "{\"model\":\"m\",\"prompt\":\"hello\",\"max_tokens\":60,\"stream\":true}")).build();
            CompletableFuture<HttpResponse<String>> inFlight = bed.http.sendAsync(req,
                    HttpResponse.BodyHandlers.ofString());
            assertThat(PdTestbed.eventually(Duration.ofSeconds(5), () -> bed.gateway.liveRequests() == 1)).isTrue();
            bed.gateway.apply(ConfigLoader.parse(bed.yaml.replace("priorities: [urgent, normal, low]",
                    "priorities: [normal]"), "test"));
            HttpResponse<String> r = inFlight.get(20, TimeUnit.SECONDS);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).contains("[DONE]");
            assertThat(PdTestbed.eventually(Duration.ofSeconds(5), () -> lines.list.stream()
                    .anyMatch(e -> e.getFormattedMessage().startsWith("request rid=")
                            && e.getFormattedMessage().contains("priority=low")))).isTrue();
            bed.assertQuiescent();
        } finally {
            exchangeLog.detachAppender(lines);
        }
    }
}
