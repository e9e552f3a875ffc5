package dev.sluice.gateway.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * gen_ai.server.time_per_output_token is a sequence's: a /generate batch decodes its prompts side by
 * side (one token each per step of the simulated decode), so a batch of two shows the same time per
 * token as one prompt, not half of it.
 */
class TimePerOutputTokenEndToEndTest {
    private static final String SUM = "gen_ai_server_time_per_output_token_seconds_sum{gen_ai_operation_name=\"text_completion\"}";
    private static final String COUNT = "gen_ai_server_time_per_output_token_seconds_count{gen_ai_operation_name=\"text_completion\"}";

    @Test
    void aBatchOfTwoHasTheTimePerTokenOfOneSequence() throws Exception {
        try (PdTestbed bed = PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(25)),
                "{connect: 2s, first_token: 20s, idle_stream: 10s}", "")) {
            double single = tpot(bed, "\"hello there\"");
            double batch = tpot(bed, "[\"hello there\", \"and you too\"]");
            assertThat(single).as("one sequence: about one decode step a token").isBetween(0.015, 0.1);
            assertThat(batch / single).as("batch %s s against single %s s", batch, single).isBetween(0.7, 1.5);
        }
    }

    /** The time per output token recorded for one request of {@code text}, 12 new tokens each. */
    private static double tpot(PdTestbed bed, String text) throws Exception {
        double sum = bed.metric(SUM);
        double count = bed.metric(COUNT);
        HttpResponse<String> res = bed.http.send(HttpRequest.newBuilder(bed.uri("/generate")).timeout(Duration.ofSeconds(20))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"text\":" + text + ",\"sampling_params\":"
                        + "{\"max_new_tokens\":12,\"ignore_eos\":true}}")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        assertThat(bed.metric(COUNT)).isEqualTo(count + 1);
        return bed.metric(SUM) - sum;
    }
}
