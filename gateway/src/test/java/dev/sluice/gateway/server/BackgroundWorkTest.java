package dev.sluice.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.background.PeriodicTask;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.testbed.testing.Poll;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A running gateway's periodic tasks and threads: what a slow or failing task does not stop. */
class BackgroundWorkTest {
    private static final String CONFIG = """
            listen: {host: 127.0.0.1, port: 0}
            admin: {port: 0}
            workers:
              prefill: [{url: "http://127.0.0.1:1"}]
              decode: [{url: "http://127.0.0.1:2"}]
            """;
    /** Generous: an answer from a free admin loop takes milliseconds; a blocked one never comes. */
    private static final Duration ANSWER = Duration.ofSeconds(10);

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(ANSWER).build();
    private GatewayServer gateway;

    @BeforeEach
    void start() throws Exception {
        gateway = new GatewayServer(ConfigLoader.parse(CONFIG, "test")).start();
    }

    @AfterEach
    void stop() {
        gateway.close();
    }

    private HttpResponse<String> admin(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.adminPort() + path))
                .timeout(ANSWER).build(), HttpResponse.BodyHandlers.ofString());
    }

    private long expirySweeps() {
        return gateway.metrics().registry().get("sluice.background.task.duration").tag("task", "admission_expiry")
                .timer().count();
    }

    /** Before: the admin listener ran on the control loop, and these requests timed out. */
    @Test
    void adminStateAndMetricsAnswerWhileTheControlLoopIsBlocked() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        GatewayServerAccess.controlLoop(gateway).execute(() -> {
            entered.countDown();
            try {
                release.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try {
            assertThat(entered.await(10, TimeUnit.SECONDS)).as("the control loop took the blocking task").isTrue();
            long sweeps = expirySweeps();

            HttpResponse<String> state = admin("/admin/state");
            HttpResponse<String> metrics = admin("/metrics");

            assertThat(state.statusCode()).isEqualTo(200);
            assertThat(state.body()).contains("\"workers\"");
            assertThat(metrics.statusCode()).isEqualTo(200);
            assertThat(metrics.body()).contains("sluice_background_task_failures_total{task=\"admission_expiry\",}");
            assertThat(expirySweeps()).as("the control loop was blocked all along").isEqualTo(sweeps);
        } finally {
            release.countDown();
        }
        long after = expirySweeps();
        assertThat(Poll.eventually(ANSWER, () -> expirySweeps() > after)).as("the sweep resumes").isTrue();
    }

    @Test
    void aTaskThatThrowsOnTheControlLoopIsCountedAndNeitherItNorTheOthersStop() throws Exception {
        long sweeps = expirySweeps();
        PeriodicTask failing = GatewayServerAccess.backgroundTasks(gateway).every("test_always_fails",
                GatewayServerAccess.controlLoop(gateway), Duration.ofMillis(5), () -> {
                    throw new IllegalStateException("a bug in a periodic task");
                });

        assertThat(Poll.eventually(ANSWER, () -> scraped("sluice_background_task_failures_total",
                "test_always_fails") >= 5)).as("its failures, as scraped").isTrue();
        assertThat(failing.scheduled()).isTrue();
        assertThat(Poll.eventually(ANSWER, () -> scraped("sluice_background_task_duration_seconds_count",
                "admission_expiry") >= sweeps + 5)).as("admission's sweep runs beside it").isTrue();
        assertThat(scraped("sluice_background_task_failures_total", "admission_expiry")).isZero();
    }

    /** One sample of the admin listener's /metrics, or -1 when absent or unreadable. */
    private double scraped(String metric, String task) {
        try {
            Matcher m = Pattern.compile("(?m)^" + metric + "\\{task=\"" + task + "\",} (\\S+)$")
                    .matcher(admin("/metrics").body());
            return m.find() ? Double.parseDouble(m.group(1)) : -1;
        } catch (Exception e) {
            return -1;
        }
    }
}
