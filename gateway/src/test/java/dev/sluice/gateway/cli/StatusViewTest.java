package dev.sluice.gateway.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/**
 * The {@code prefill} line of {@code status} says how deadlines are judged while the rate is only the guess;
 * a worker's line says how its data-parallel ranks are routed when that is news.
 */
class StatusViewTest {
    private static JsonNode state(boolean earlyRejection) throws Exception {
        return new ObjectMapper().readTree("""
                {"ready": true, "live_requests": 0,
                 "limits": {"max_queued_requests": 32, "max_pending_tokens": 262144, "early_rejection": %s},
                 "queue": {"queued": 0, "pending_tokens": 0, "inflight_prefill_tokens": 0, "dispatched": 0,
                           "prefill_tokens_per_second": 8000, "throughput_measured": false, "by_class": {}},
                 "workers": [], "recent_errors": []}
                """.formatted(earlyRejection));
    }

    @Test
    void aGuessedRateIsJudgedAtTheInFlightBoundUnlessEarlyRejectionIsOff() throws Exception {
        assertThat(StatusView.render(state(true), "http://127.0.0.1:9001"))
                .contains("prefill  8000 tokens/s (guess: deadline checks at the in-flight bound)");
        assertThat(StatusView.render(state(false), "http://127.0.0.1:9001"))
                .contains("prefill  8000 tokens/s (guess: deadline checks off)");
    }

    @Test
    void aWorkerRoutedPerRankOrAVllmWorkerKeptWholeSaysWhy() throws Exception {
        String workers = """
                [{"role": "decode", "worker": "127.0.0.1:8001", "state": "healthy",
                  "dp_ranks": {"routed": 4, "detail": "per rank: vLLM's /metrics shows 4 engines (the rank goes in X-data-parallel-rank)"}},
                 {"role": "prefill", "worker": "127.0.0.1:8000", "state": "healthy",
                  "dp_ranks": {"routed": 1, "detail": "per worker: vLLM's /metrics shows one engine (dp_size 1, or one rank of an externally balanced deployment)"}},
                 {"role": "decode", "worker": "127.0.0.1:8002", "state": "healthy",
                  "dp_ranks": {"routed": 1, "detail": "per worker: the worker reports no dp_size"}}]""";
        JsonNode s = new ObjectMapper().readTree(state(true).toString().replace("\"workers\":[]", "\"workers\":" + workers));
        String out = StatusView.render(s, "http://127.0.0.1:9001");
        assertThat(out).contains("  decode 127.0.0.1:8001: per rank: vLLM's /metrics shows 4 engines")
                .contains("  prefill 127.0.0.1:8000: per worker: vLLM's /metrics shows one engine")
                .doesNotContain("reports no dp_size");
    }
}
