package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.admission.AdmissionSnapshot;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.CoordinatedFleet;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The measured prefill rates kept in Redis with coordination on (a real redis-server): a replica started
 * after another has measured a worker starts with that rate, and refuses a deadline out of reach on its
 * very first request, where the rate would otherwise be a guess and the deadline checks off. A fleet of
 * another name shares nothing: its replica starts with the guess. Also when the first replica has stopped
 * (a rolled pod whose disk died with it): its last rates were written at its stop.
 */
class FleetPrefillRatesEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int SIM_RATE = 4_000;
    @TempDir
    Path dir;
    private CoordinatedFleet fleet;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeEach
    void start() throws Exception {
        fleet = CoordinatedFleet.start(dir.resolve("redis"), 1, SIM_RATE);
    }

    @AfterEach
    void stop() throws Exception {
        fleet.close();
    }

    private GatewayServer gateway(String replica, String fleetName) throws Exception {
        return fleet.gateway(fleet.workersYaml()
                + "timeouts: {connect: 2s, first_token: 60s, idle_stream: 60s}\n"
                + "health: {interval: 200ms, timeout: 3s}\ntelemetry: {interval: 200ms}\nadmin: {port: 0}\n"
                + "admission: {max_queued_requests: 32, queue_timeout: 30s, prefill_rate: {from_telemetry: false, "
                // no calibration: the test follows a rate measured on client prefills from replica to replica
                + "calibration: {on_start: never}}}\n"
                + fleet.coordinationYaml(replica, "3s") + (fleetName.isEmpty() ? "" : "  fleet: " + fleetName + "\n"));
    }

    /** A completions request of {@code tokens} prompt tokens (ids: the count is exact). */
    private static String prompt(int tokens, int salt) {
        return "{\"model\":\"sim-model\",\"max_tokens\":2,\"prompt\":[" + salt + ","
                + IntStream.range(1, tokens).mapToObj(i -> String.valueOf(1 + i % 30_000))
                .collect(Collectors.joining(",")) + "]}";
    }

    private HttpResponse<String> send(GatewayServer g, String body, String deadlineMs) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + g.port() + "/v1/completions"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        if (deadlineMs != null) {
            b.header("X-Sluice-Deadline-Ms", deadlineMs);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static AdmissionSnapshot.PrefillRate rate(GatewayServer g) {
        return g.admission().snapshot().prefillRates().values().iterator().next();
    }

    /** Two 2,500-token prompts through {@code g} (the first completion is never a sample): its measured rate. */
    private double measure(GatewayServer g) throws Exception {
        for (int i = 0; i < 2; i++) {
            HttpResponse<String> r = send(g, prompt(2_500, 1_000 + i), null);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        }
        assertThat(eventually(Duration.ofSeconds(5), () -> rate(g).source().equals("measured"))).isTrue();
        return rate(g).tokensPerSecond();
    }

    /** The fleet's hash in Redis holds the prefill's entry. */
    private boolean kept(String key) throws Exception {
        return fleet.redis.cli("HGET", key, fleet.cluster.prefills().get(0).url()).contains("tokens_per_second");
    }

    /**
     * 3,000 prompt tokens (0.75 s of prefill) with a 250 ms deadline: out of reach, known only with a rate (small
     * enough for a new replica's first share of the token budget).
     */
    private HttpResponse<String> unreachable(GatewayServer g) throws Exception {
        return send(g, prompt(3_000, 7), "250");
    }

    @Test
    void aReplicaStartedLaterKnowsTheRateAndRefusesAnUnreachableDeadlineOnItsFirstRequest() throws Exception {
        GatewayServer first = gateway("gw-0", "");
        double measured = measure(first);
        assertThat(eventually(Duration.ofSeconds(10), () -> {
            try {
                return kept("{sluice}:prefill_rates");
            } catch (Exception e) {
                return false;
            }
        })).as("the rate written to the fleet's hash").isTrue();

        GatewayServer second = gateway("gw-1", "");
        AdmissionSnapshot.PrefillRate r = rate(second);
        assertThat(r.source()).isEqualTo("state_file");
        assertThat(r.tokensPerSecond()).isCloseTo(measured, org.assertj.core.data.Offset.offset(0.1));
        // its first client request once it has its share of the fleet's budget (a joining replica's is 0)
        assertThat(eventually(Duration.ofSeconds(10), () -> second.coordination().orElseThrow().serving())).isTrue();
        assertThat(rate(second).source()).isEqualTo("state_file"); // nothing measured through it yet
        HttpResponse<String> res = unreachable(second);
        assertThat(res.statusCode()).as(res.body()).isEqualTo(429);
        JsonNode error = JSON.readTree(res.body()).path("error");
        assertThat(error.path("code").asText()).isEqualTo("deadline_unreachable");
        assertThat(res.headers().firstValue("X-Sluice-Reject-Reason")).hasValue("deadline_unreachable");
        assertThat(fleet.cluster.prefills().get(0).journal()).noneMatch(j -> j.body() != null
                && j.body().toString().contains("[7,"));

        // another fleet's replica shares none of it: the guess, deadline checks off, the same request served
        GatewayServer other = gateway("gw-x", "other");
        assertThat(rate(other).source()).isEqualTo("guess");
        HttpResponse<String> served = unreachable(other);
        assertThat(served.statusCode()).as(served.body()).isEqualTo(200);
        assertThat(fleet.redis.cli("EXISTS", "{sluice:other}:prefill_rates").trim()).isEqualTo("0");
    }

    @Test
    void aReplicaThatStoppedLeavesItsRatesForTheOneThatReplacesIt() throws Exception {
        GatewayServer first = gateway("gw-0", "");
        double measured = measure(first);
        fleet.stop(first); // a stopping replica writes its rates (whether or not a periodic write came first)
        assertThat(kept("{sluice}:prefill_rates")).isTrue();
        assertThat(fleet.redis.cli("PTTL", "{sluice}:prefill_rates").trim()).matches("[1-9][0-9]+");

        GatewayServer next = gateway("gw-0", "");
        assertThat(rate(next)).isEqualTo(new AdmissionSnapshot.PrefillRate(rate(next).tokensPerSecond(), "state_file"));
        assertThat(rate(next).tokensPerSecond()).isCloseTo(measured, org.assertj.core.data.Offset.offset(0.1));
        assertThat(unreachable(next).statusCode()).isEqualTo(429);
    }
}
