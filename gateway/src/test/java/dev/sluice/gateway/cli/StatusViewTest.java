package dev.sluice.gateway.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/** The {@code prefill} line of {@code status} says how deadlines are judged while the rate is only the guess. */
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
}
