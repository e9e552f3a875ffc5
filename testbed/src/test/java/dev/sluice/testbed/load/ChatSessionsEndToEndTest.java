package dev.sluice.testbed.load;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A small chat-sessions run straight to one prefill and one decode with the prefix cache on: every
 * turn is sent once its previous one ended, the prefill sees exactly the prompts the plan holds,
 * and the report carries the prefix cache hit rate, the prefill GPU time and the per-worker load.
 */
class ChatSessionsEndToEndTest {
    @Test
    void everyTurnIsSentAndThePrefillReportAddsUp() throws Exception {
        SimConfig cfg = SimConfig.defaults().withPrefillTokensPerSecond(50_000).withDecodeStep(Duration.ofMillis(1))
                .withPrefixCacheTokens(100_000);
        SessionWorkload chat = new SessionWorkload(4, 3, 2, 400, 20, 8, 1.0, 40.0, Duration.ofMillis(20));
        try (SimCluster cluster = SimCluster.start(1, 1, 0, cfg)) {
            PrefillServer p = cluster.prefills().get(0);
            LoadSpec spec = new LoadSpec(LoadSpec.Target.DIRECT, null, List.of(URI.create(p.url())),
                    List.of(p.bootstrapPort()), List.of(URI.create(cluster.decodes().get(0).url())), 0, null,
                    LoadSpec.Arrival.POISSON, 0, 0, 3, 1, 8, Duration.ofSeconds(10), null, null, null, 0, "sim-model",
                    List.of(), Duration.ofSeconds(30), "chat", chat);

            ObjectNode r = new LoadRun(spec, new PrintStream(new ByteArrayOutputStream(), true)).run();

            String text = TextReport.render(r);
            assertThat(r.at("/counts/sent").asInt()).as(text).isEqualTo(12);
            assertThat(r.at("/counts/completed").asInt()).as(text).isEqualTo(12);
            ChatSessions plan = new ChatSessions(chat, 3, null);
            long planned = 0;
            for (int s = 0; s < 4; s++) {
                for (int t = 0; t < 3; t++) {
                    planned += ChatSessions.tokens(plan.messages(s, t));
                }
            }
            JsonNode prefill = r.get("prefill");
            assertThat(prefill.path("workers").asInt()).as(text).isEqualTo(1);
            assertThat(prefill.path("requests").asInt()).as(text).isEqualTo(12);
            assertThat(prefill.path("prompt_tokens").asLong()).as(text).isEqualTo(planned);
            // every later turn finds its previous turn cached, and the second session of a system prompt finds that
            assertThat(prefill.path("prefix_cache_hit_rate").asDouble()).as(text).isBetween(0.5, 0.95);
            assertThat(prefill.path("prefix_cache_hit_tokens").asLong()).as(text)
                    .isLessThanOrEqualTo(r.at("/workload_plan/cacheable_tokens").asLong());
            assertThat(r.at("/workload_plan/prompt_tokens").asLong()).isEqualTo(planned);
            assertThat(prefill.path("gpu_seconds").asDouble()).as(text).isGreaterThan(0)
                    .isLessThan(planned / 50_000.0 * 1.5);
            assertThat(prefill.at("/max_over_mean/prompt_tokens").asDouble()).isEqualTo(1.0);
            assertThat(r.at("/config/workload/name").asText()).isEqualTo("chat-sessions");
            JsonNode last = r.at("/requests/11");
            assertThat(last.path("session").asInt()).isEqualTo(3);
            assertThat(last.path("turn").asInt()).isEqualTo(2);
            assertThat(text).contains("prefix cache hit rate");
        }
    }
}
