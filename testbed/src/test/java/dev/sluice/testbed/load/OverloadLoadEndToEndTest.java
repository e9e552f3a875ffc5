package dev.sluice.testbed.load;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.testbed.cli.DurationConverter;
import dev.sluice.testbed.sim.AbortOnDisconnect;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.RecordedRequest;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import dev.sluice.testbed.sim.UnifiedServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Short real runs of the overload scenarios' options against in-process simulated clusters: the
 * per-request fields and the timeline, client classes, mini_lb's give-up, non-streamed answers and
 * the priority header.
 */
class OverloadLoadEndToEndTest {
    private static ClientClass cls(String spec) {
        return ClientClass.parse(spec, DurationConverter::parse);
    }

    private static LoadSpec direct(SimCluster cluster, int requests, int promptTokens, Duration timeout,
                                   LoadOptions options) {
        PrefillServer p = cluster.prefills().get(0);
        return new LoadSpec(LoadSpec.Target.DIRECT, null, List.of(URI.create(p.url())), List.of(p.bootstrapPort()),
                List.of(URI.create(cluster.decodes().get(0).url())), requests, null, LoadSpec.Arrival.BURST, requests, 0,
                7, promptTokens, 8, timeout, null, null, null, 0, "sim-model", List.of(), Duration.ofSeconds(30),
                "e2e", null, options);
    }

    private static ObjectNode run(LoadSpec spec) throws InterruptedException {
        return new LoadRun(spec, new PrintStream(new ByteArrayOutputStream(), true)).run();
    }

    /**
     * Six ~5,000-token prompts at 4,000 tokens/s (~7.5 s of prefill), clients of 1 s and 3 s
     * patience, streamed, through mini_lb to SGLang-rule workers: the clients that give up close
     * both halves, and the prefill aborts the ones still waiting at its 4 s check.
     */
    @Test
    void miniLbStreamedGiveUpsCloseBothHalvesAndTheReportCarriesEveryField() throws Exception {
        SimConfig cfg = SimConfig.defaults().withPrefillTokensPerSecond(4_000).withDecodeStep(Duration.ofMillis(2))
                .withAbortOnDisconnect(AbortOnDisconnect.SGLANG);
        try (SimCluster cluster = SimCluster.start(1, 1, 0, cfg)) {
            LoadOptions o = LoadOptions.DEFAULTS.withPromptRange(4_000, 6_000)
                    .withClasses(List.of(cls("quick:0.5:1s"), cls("patient:0.5:3s")))
                    .withRouter(LoadOptions.Router.MINI_LB);
            ObjectNode r = run(direct(cluster, 6, 1000, Duration.ofSeconds(30), o));

            String text = TextReport.render(r);
            assertThat(r.at("/counts/sent").asInt()).as(text).isEqualTo(6);
            assertThat(r.at("/counts/gave_up").asInt()).as(text).isGreaterThanOrEqualTo(3);
            assertThat(r.at("/config/router").asText()).isEqualTo("mini-lb");
            assertThat(r.at("/router/prefill_answers/closed_by_router").asInt()).as(text).isGreaterThanOrEqualTo(3);
            assertThat(r.at("/workers/per_worker/0/role").asText()).isEqualTo("prefill");
            assertThat(r.at("/workers/per_worker/0/aborted_requests").asInt()).as(text).isGreaterThanOrEqualTo(1);
            JsonNode byClass = r.path("by_class");
            assertThat(byClass.path("quick").path("sent").asInt() + byClass.path("patient").path("sent").asInt())
                    .isEqualTo(6);
            assertThat(byClass.path("patient").path("slo_ttft_ms").asDouble()).isEqualTo(3000.0);
            for (JsonNode q : r.path("requests")) {
                assertThat(q.path("send_ms").asDouble()).isBetween(0.0, 500.0);
                assertThat(q.path("prompt_tokens").asInt()).isBetween(4_000, 6_000);
                String c = q.path("class").asText();
                assertThat(c).isIn("quick", "patient");
                assertThat(q.path("patience_ms").asDouble()).isEqualTo(c.equals("quick") ? 1000.0 : 3000.0);
                assertThat(q.path("slo_ttft_ms").asDouble()).isEqualTo(q.path("patience_ms").asDouble());
                assertThat(q.path("end_ms").asDouble()).isGreaterThan(q.path("send_ms").asDouble());
                if (q.path("outcome").asText().equals("completed")) {
                    assertThat(q.path("first_token_ms").asDouble()).isBetween(q.path("send_ms").asDouble(),
                            q.path("end_ms").asDouble());
                } else {
                    assertThat(q.path("first_token_ms").isNull()).isTrue();
                }
                assertThat(q.has("rejected_ms")).isTrue();
            }
            JsonNode timeline = r.path("timeline");
            assertThat(timeline.size()).as("a sample every 500 ms").isGreaterThanOrEqualTo(2);
            assertThat(timeline.get(0).path("t_ms").asLong()).isBetween(0L, 1_000L);
            assertThat(timeline.get(0).path("pending_tokens").isNull()).isTrue();
            boolean queued = false;
            for (JsonNode s : timeline) {
                queued |= s.path("queue_depth").asInt() >= 2;
            }
            assertThat(queued).as("the prefill queue was seen: %s", timeline).isTrue();
            assertThat(r.at("/rejected_after_wait/count").asInt()).isZero();
        }
    }

    @Test
    void nonStreamedAnswersAreMeasuredAndTheSglangRouterLeavesThePrefillRunning() throws Exception {
        SimConfig cfg = SimConfig.defaults().withDecodeStep(Duration.ofMillis(2))
                .withAbortOnDisconnect(AbortOnDisconnect.NEVER);
        try (SimCluster cluster = SimCluster.start(1, 1, 0, cfg)) {
            ObjectNode r = run(direct(cluster, 3, 500, Duration.ofSeconds(10), LoadOptions.DEFAULTS.withStream(false)));

            String text = TextReport.render(r);
            assertThat(r.at("/counts/completed").asInt()).as(text).isEqualTo(3);
            assertThat(r.at("/goodput/good_requests").asInt()).as(text).isEqualTo(3);
            assertThat(r.at("/throughput/output_tokens").asInt()).as(text).isEqualTo(24);
            assertThat(r.at("/config/stream").asBoolean()).isFalse();
            assertThat(r.at("/config/router").asText()).isEqualTo("sglang-router");
            assertThat(r.at("/router/prefill_answers/ok").asInt()).isEqualTo(3);
            for (JsonNode q : r.path("requests")) {
                assertThat(q.path("prompt_tokens").asInt()).isEqualTo(500);
                assertThat(q.path("class").isNull()).isTrue();
                assertThat(q.path("slo_ttft_ms").isNull()).isTrue();
                assertThat(q.path("patience_ms").asDouble()).isEqualTo(10_000.0);
                assertThat(q.path("first_token_ms").asDouble()).isLessThanOrEqualTo(q.path("end_ms").asDouble());
            }
            for (RecordedRequest rec : cluster.decodes().get(0).journal()) {
                if (rec.path().equals("/v1/chat/completions")) {
                    assertThat(rec.body().path("stream").asBoolean(true)).isFalse();
                    assertThat(rec.body().has("stream_options")).isFalse();
                }
            }
        }
    }

    @Test
    void throughTheGatewayEachRequestCarriesItsClassAsPriority() throws Exception {
        SimConfig cfg = SimConfig.defaults().withDecodeStep(Duration.ofMillis(2));
        try (SimCluster cluster = SimCluster.start(0, 1, 0, cfg, SimMode.UNIFIED)) {
            UnifiedServer u = cluster.unified().get(0);
            LoadOptions o = LoadOptions.DEFAULTS.withClasses(List.of(cls("high:0.5:10s"), cls("low:0.5:20s")));
            LoadSpec spec = new LoadSpec(LoadSpec.Target.GATEWAY, URI.create(u.url()), List.of(), List.of(), List.of(),
                    8, null, LoadSpec.Arrival.BURST, 8, 0, 3, 200, 4, Duration.ofSeconds(30), null, null, null, 0,
                    "sim-model", List.of(), Duration.ofSeconds(10), "gw", null, o);
            ObjectNode r = run(spec);

            assertThat(r.at("/goodput/good_requests").asInt()).as(TextReport.render(r)).isEqualTo(8);
            assertThat(r.at("/timeline/0/pending_tokens").isNumber()).as("gateway samples carry a token figure")
                    .isTrue();
            List<String> sent = r.findValuesAsText("class");
            List<String> seen = u.journal().stream().filter(q -> q.path().equals("/v1/chat/completions"))
                    .map(q -> q.headers().get("x-sluice-priority")).sorted().toList();
            assertThat(seen).isEqualTo(sent.stream().sorted().toList()).hasSize(8).contains("high", "low");
            // each client tells the gateway how long it will wait: its class's patience
            List<String> deadlines = u.journal().stream().filter(q -> q.path().equals("/v1/chat/completions"))
                    .map(q -> q.headers().get("x-sluice-priority") + "=" + q.headers().get("x-sluice-deadline-ms"))
                    .distinct().sorted().toList();
            assertThat(deadlines).containsExactly("high=10000", "low=20000");
        }
    }
}
