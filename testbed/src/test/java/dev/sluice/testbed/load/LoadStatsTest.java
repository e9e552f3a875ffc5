package dev.sluice.testbed.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.testbed.load.RequestResult.Outcome;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Percentiles, TPOT, goodput and the other pure pieces of the load generator. */
class LoadStatsTest {
    private static final long MS = 1_000_000L;

    private static RequestResult completed(long ttftMs, long e2eMs, int tokens) {
        return new RequestResult(0, Outcome.COMPLETED, 200, null, null, null, null, ttftMs * MS, e2eMs * MS,
                new long[] {10 * MS, 20 * MS}, tokens);
    }

    @Test
    void percentilesAndMeanOfOneToThousandMilliseconds() {
        Summary s = new Summary();
        for (int i = 1; i <= 1000; i++) {
            s.addNanos(i * MS);
        }
        assertThat(s.count()).isEqualTo(1000);
        assertThat(s.meanMs()).isCloseTo(500.5, within(0.5));
        assertThat(s.percentileMs(50)).isCloseTo(500, within(0.5));
        assertThat(s.percentileMs(90)).isCloseTo(900, within(1.0));
        assertThat(s.percentileMs(99)).isCloseTo(990, within(1.0));
        assertThat(new Summary().percentileMs(50)).isNaN();
        assertThat(new Summary().toJson().get("p99").isNull()).isTrue();
    }

    @Test
    void tpotIsTheDecodeTimePerTokenAfterTheFirst() {
        assertThat(completed(200, 1000, 5).tpotNanos()).isEqualTo(200 * MS);
        assertThat(completed(200, 1000, 1).tpotNanos()).as("undefined for one token").isEqualTo(-1);
    }

    @Test
    void goodputNeedsEveryGivenSlo() {
        Duration ttft = Duration.ofMillis(300);
        Duration tpot = Duration.ofMillis(100);
        Duration e2e = Duration.ofSeconds(1);
        assertThat(LoadReport.good(completed(200, 600, 5), ttft, tpot, e2e)).isTrue(); // tpot 100
        assertThat(LoadReport.good(completed(400, 600, 5), ttft, tpot, e2e)).isFalse();
        assertThat(LoadReport.good(completed(200, 1200, 11), ttft, tpot, e2e)).isFalse(); // e2e
        assertThat(LoadReport.good(completed(200, 700, 5), ttft, tpot, null)).isFalse(); // tpot 125
        assertThat(LoadReport.good(completed(200, 700, 1), ttft, tpot, null)).isTrue(); // no tpot to miss
        assertThat(LoadReport.good(completed(5000, 9000, 5), null, null, null)).isTrue();
        RequestResult gaveUp = new RequestResult(1, Outcome.GAVE_UP, 200, null, null, "before_first_token", null, -1,
                30_000 * MS, new long[0], 0);
        assertThat(LoadReport.good(gaveUp, null, null, null)).isFalse();
    }

    @Test
    void clientFiguresCountEveryOutcome() {
        List<RequestResult> results = new ArrayList<>();
        results.add(completed(100, 500, 5));
        results.add(completed(2000, 2500, 5));
        results.add(new RequestResult(2, Outcome.REJECTED, 429, "token_budget_exceeded", "12", null, "full", -1,
                2 * MS, new long[0], 0));
        results.add(new RequestResult(3, Outcome.REJECTED, 503, "no_capacity", null, null, "none", -1, 4 * MS,
                new long[0], 0));
        results.add(new RequestResult(4, Outcome.GAVE_UP, 200, null, null, "mid_stream", null, 10 * MS, 40 * MS,
                new long[0], 1));
        results.add(new RequestResult(5, Outcome.FAILED, 200, null, null, "stream_error", "KVTransferError", -1,
                9 * MS, new long[0], 0));

        ObjectNode o = LoadReport.clients(results, 10.0, Duration.ofSeconds(1), null, null);

        assertThat(o.at("/counts/sent").asInt()).isEqualTo(6);
        assertThat(o.at("/counts/completed").asInt()).isEqualTo(2);
        assertThat(o.at("/counts/gave_up").asInt()).isEqualTo(1);
        assertThat(o.at("/counts/gave_up_mid_stream").asInt()).isEqualTo(1);
        assertThat(o.at("/counts/failed").asInt()).isEqualTo(1);
        assertThat(o.at("/counts/rejected").asInt()).isEqualTo(2);
        assertThat(o.at("/failed_by_kind/stream_error").asInt()).isEqualTo(1);
        assertThat(o.at("/rejected_by_status/429").asInt()).isEqualTo(1);
        assertThat(o.at("/rejected_by_code/no_capacity").asInt()).isEqualTo(1);
        assertThat(o.at("/rejection_latency_ms/count").asInt()).isEqualTo(2);
        assertThat(o.at("/retry_after_s/max").asDouble()).isEqualTo(12.0);
        assertThat(o.at("/goodput/good_requests").asInt()).isEqualTo(1);
        assertThat(o.at("/goodput/requests_per_s").asDouble()).isEqualTo(0.1);
        assertThat(o.at("/throughput/requests_per_s").asDouble()).isEqualTo(0.2);
        assertThat(o.at("/throughput/output_tokens").asInt()).isEqualTo(10);
        assertThat(o.at("/latency_ms/ttft/count").asInt()).as("completed requests only").isEqualTo(2);
        assertThat(o.at("/latency_ms/itl/count").asInt()).isEqualTo(4);
        assertThat(o.at("/goodput/slo_ms/ttft").asLong()).isEqualTo(1000);
        assertThat(o.at("/goodput/slo_ms/tpot").isNull()).isTrue();
    }

    @Test
    void arrivalsAreSeededAndBounded() {
        long[] a = Arrivals.offsetsNanos(LoadSpec.Arrival.BURST_POISSON, 5, 2.0, 0, Duration.ofSeconds(100), 7);
        long[] b = Arrivals.offsetsNanos(LoadSpec.Arrival.BURST_POISSON, 5, 2.0, 0, Duration.ofSeconds(100), 7);
        assertThat(a).isEqualTo(b);
        assertThat(a).startsWith(0, 0, 0, 0, 0);
        assertThat(a[5]).isPositive();
        assertThat(a.length - 5).as("~rate x window").isBetween(150, 250);
        assertThat(a[a.length - 1]).isLessThan(Duration.ofSeconds(100).toNanos());
        assertThat(Arrivals.offsetsNanos(LoadSpec.Arrival.POISSON, 0, 2.0, 7, null, 1)).hasSize(7);
        assertThat(Arrivals.offsetsNanos(LoadSpec.Arrival.BURST, 0, 0, 4, null, 1)).containsExactly(0, 0, 0, 0);
        assertThat(Arrivals.offsetsNanos(LoadSpec.Arrival.BURST_POISSON, 20, 1, 12, null, 1)).hasSize(12);
    }

    @Test
    void promptsAreSizedJitteredDistinctAndReproducible() {
        String p0 = Prompts.of(1, 0, 11_000);
        String p1 = Prompts.of(1, 1, 11_000);
        assertThat(p0).isEqualTo(Prompts.of(1, 0, 11_000)).isNotEqualTo(p1);
        for (String p : List.of(p0, p1)) {
            assertThat(p.getBytes(StandardCharsets.UTF_8).length).isBetween(39_600, 48_400);
        }
        assertThat(p1).startsWith("Request 1. ");
    }

    @Test
    void prometheusSamplesAreSummedOverLabels() {
        Map<String, Double> m = WorkerProbe.parse("""
                # HELP sglang:num_transfer_failed_reqs_total x
                # TYPE sglang:num_transfer_failed_reqs_total counter
                sglang:num_transfer_failed_reqs_total{dp_rank="0"} 3.0
                sglang:num_transfer_failed_reqs_total{dp_rank="1"} 2.0
                sim:departed_client_work_seconds_total 1.5
                """);
        assertThat(m).containsEntry("sglang:num_transfer_failed_reqs_total", 5.0)
                .containsEntry("sim:departed_client_work_seconds_total", 1.5);
    }

    @Test
    void sseLinesSurviveChunksCutAnywhere() {
        String stream = "data: {\"a\":1}\n\ndata: [DONE]\r\n\r\n";
        List<String> data = new ArrayList<>();
        SseLines sse = new SseLines();
        byte[] bytes = stream.getBytes(StandardCharsets.UTF_8);
        for (byte b : bytes) {
            sse.feed(Unpooled.wrappedBuffer(new byte[] {b}), data::add);
        }
        assertThat(data).containsExactly("{\"a\":1}", "[DONE]");
    }
}
