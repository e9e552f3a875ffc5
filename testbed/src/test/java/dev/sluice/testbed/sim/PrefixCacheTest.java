package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.SimClient.nextRoom;
import static dev.sluice.testbed.sim.SimClient.pd;
import static dev.sluice.testbed.sim.VllmHandoffTest.metric;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The simulated prefix cache: what matches, what it costs, what the counters say. */
class PrefixCacheTest {
    /** 2,400 tokens of shared text: 1.2 s of prefill at 2,000 tokens a second. */
    private static final String SHARED = "The same long system prompt. ".repeat(331);
    private static final SimConfig CONFIG = SimConfig.defaults().withPrefillTokensPerSecond(2_000)
            .withDecodeStep(Duration.ofMillis(1)).withPrefixCacheTokens(SimConfig.DEFAULT_PREFIX_CACHE_TOKENS);
    private final SimClient client = new SimClient();

    @Test
    void blocksMatchOnlyAsAPrefixAndNeverTheWholePrompt() {
        PrefixCache cache = new PrefixCache(1_000);
        String a = "a".repeat(64 * 3);
        long[] blocksA = PromptBlocks.ofText(a);
        assertThat(blocksA).hasSize(3);
        assertThat(PromptBlocks.ofText(a + "tail")).startsWith(blocksA);
        assertThat(PromptBlocks.ofText("b" + a.substring(1))[2]).as("one early change moves every block")
                .isNotEqualTo(blocksA[2]);

        assertThat(cache.lookup(blocksA, 48)).isZero();
        cache.insert(blocksA);
        assertThat(cache.lookup(blocksA, 48)).as("the last token is always computed").isEqualTo(47);
        assertThat(cache.lookup(PromptBlocks.ofText(a + "x".repeat(64)), 64)).isEqualTo(48);
        assertThat(cache.lookup(PromptBlocks.ofText("b" + a), 49)).isZero();
        assertThat(cache.queryTokens()).isEqualTo(48 + 48 + 64 + 49);
        assertThat(cache.hitTokens()).isEqualTo(47 + 48);
        assertThat(cache.hitRate()).isEqualTo((47.0 + 48) / (48 + 48 + 64 + 49));

        PrefixCache tiny = new PrefixCache(32); // two blocks: the oldest goes first
        tiny.insert(blocksA);
        assertThat(tiny.lookup(blocksA, 48)).as("its first block was evicted: nothing matches").isZero();
        assertThat(new PrefixCache(0).enabled()).isFalse();
    }

    @Test
    void chatPromptsRenderEveryMessageWithItsRole() {
        String system = "{\"role\":\"system\",\"content\":\"" + "s".repeat(100) + "\"}";
        long[] one = PromptBlocks.ofText(PromptBlocks.renderChat(json("{\"m\":[" + system
                + ",{\"role\":\"user\",\"content\":\"first question\"}]}").get("m")));
        long[] two = PromptBlocks.ofText(PromptBlocks.renderChat(json("{\"m\":[" + system
                + ",{\"role\":\"user\",\"content\":\"second question\"}]}").get("m")));
        long[] asUser = PromptBlocks.ofText(PromptBlocks.renderChat(json("{\"m\":[{\"role\":\"user\",\"content\":\""
                + "s".repeat(100) + "\"}]}").get("m")));
        assertThat(one[0]).isEqualTo(two[0]);
        assertThat(asUser[0]).as("the role is part of the prompt").isNotEqualTo(one[0]);
    }

    @Test
    void aSecondSglangRequestSharingALongPrefixPrefillsFasterAndTheCountersMove() throws Exception {
        try (SimCluster c = SimCluster.start(1, 1, 0, CONFIG)) {
            PrefillServer p = c.prefills().get(0);
            long firstNanos = sglang(c, SHARED + "first question");
            // SGLang's collector skips a zero increment: no prefill_cache series before the first hit
            assertThat(client.get(p, "/metrics").body()).doesNotContain("mode=\"prefill_cache\"");
            double firstBusy = p.stats().prefillBusySeconds();
            long firstTokens = p.stats().promptTokensProcessed();

            long secondNanos = sglang(c, SHARED + "second question");

            WorkerStats s = p.stats();
            double secondBusy = s.prefillBusySeconds() - firstBusy;
            assertThat(firstBusy).isGreaterThan(1.0);
            assertThat(secondBusy).as("only the uncached tail is computed").isLessThan(firstBusy / 4);
            assertThat(secondNanos).isLessThan(firstNanos / 2);
            assertThat(s.promptTokensProcessed() - firstTokens).isLessThan(firstTokens / 4);
            assertThat(s.prefixCacheHitTokens()).isGreaterThanOrEqualTo(2_300);
            assertThat(s.prefixCacheQueryTokens()).isGreaterThan(2 * 2_400);
            String metrics = client.get(p, "/metrics").body();
            assertThat(metric(metrics, "sglang:cache_hit_rate")).isBetween(0.4, 0.5);
            // the prompt tokens taken in, by mode: computed, and found in the prefix cache
            assertThat(mode(metrics, "prefill_cache")).isEqualTo(s.prefixCacheHitTokens());
            assertThat(mode(metrics, "prefill_compute")).isEqualTo(s.promptTokensProcessed());

            assertThat(client.postNow(p, "/flush_cache", json("{}")).statusCode()).isEqualTo(200);
            sglang(c, SHARED + "third question");
            assertThat(p.stats().prefixCacheHitTokens()).as("flushed: nothing more hit")
                    .isEqualTo(s.prefixCacheHitTokens());
            assertThat(c.decodes().get(0).stats().prefixCacheQueryTokens()).as("an SGLang decode never prefills")
                    .isZero();
        }
    }

    /** The sample of {@code sglang:realtime_tokens_total} for {@code mode}. */
    private static double mode(String metrics, String mode) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^sglang:realtime_tokens_total\\{[^}]*mode=\""
                + mode + "\"} (\\S+)$").matcher(metrics);
        assertThat(m.find()).as(mode + " in " + metrics).isTrue();
        return Double.parseDouble(m.group(1));
    }

    /** One PD request by hand; returns its latency. */
    private long sglang(SimCluster c, String text) throws Exception {
        ObjectNode body = pd("{\"sampling_params\":{\"max_new_tokens\":1}}", c.prefills().get(0), "r" + nextRoom(),
                nextRoom());
        body.put("text", text);
        long start = System.nanoTime();
        CompletableFuture<HttpResponse<String>> prefill = client.post(c.prefills().get(0), "/generate", body);
        assertThat(client.postNow(c.decodes().get(0), "/generate", body).statusCode()).isEqualTo(200);
        assertThat(prefill.get().statusCode()).isEqualTo(200);
        return System.nanoTime() - start;
    }

    @Test
    void vllmPrefillAndUnifiedServersCacheTooAndTheDefaultsHaveNoCache() throws Exception {
        try (SimCluster c = SimCluster.start(1, 1, 0, CONFIG, SimMode.VLLM)) {
            VllmPrefillServer p = c.vllmPrefills().get(0);
            for (String question : new String[] {"one", "two"}) {
                ObjectNode body = chat(question);
                HttpResponse<String> leg = client.postNow(p, VllmLegs.CHAT, VllmLegs.prefillLeg(body));
                assertThat(client.postNow(c.vllmDecodes().get(0), VllmLegs.CHAT,
                        VllmLegs.decodeLeg(body, json(leg.body()).get("kv_transfer_params"))).statusCode())
                        .isEqualTo(200);
            }
            String metrics = client.get(p, "/metrics").body();
            assertThat(metric(metrics, "vllm:prefix_cache_hits_total")).isGreaterThanOrEqualTo(2_300);
            assertThat(metric(metrics, "vllm:prefix_cache_queries_total")).isGreaterThan(2 * 2_400);
            assertThat(p.stats().heldKvRequests()).isZero();
        }
        try (SimCluster c = SimCluster.start(0, 1, 0, CONFIG, SimMode.UNIFIED)) {
            UnifiedServer u = c.unified().get(0);
            client.postNow(u, VllmLegs.CHAT, chat("one"));
            client.postNow(u, VllmLegs.CHAT, chat("two"));
            assertThat(u.stats().prefixCacheHitTokens()).isGreaterThanOrEqualTo(2_300);
        }
        try (SimCluster c = SimCluster.start(0, 1, 0, CONFIG.withPrefixCacheTokens(0), SimMode.UNIFIED)) {
            UnifiedServer u = c.unified().get(0);
            client.postNow(u, VllmLegs.CHAT, chat("one"));
            client.postNow(u, VllmLegs.CHAT, chat("two"));
            assertThat(u.stats().prefixCacheHitTokens()).isZero();
            assertThat(u.stats().prefixCacheQueryTokens()).isGreaterThan(2 * 2_400);
        }
        assertThat(SimConfig.defaults().prefixCacheTokens()).isZero();
    }

    private static ObjectNode chat(String question) {
        ObjectNode body = json("{\"max_tokens\":2}");
        body.putArray("messages").addObject().put("role", "system").put("content", SHARED);
        ((com.fasterxml.jackson.databind.node.ArrayNode) body.get("messages")).addObject().put("role", "user")
                .put("content", question);
        return body;
    }
}
