package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.HeadlessChromium;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebDriverException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;

/**
 * The admin status page of a gateway with two model pools, in headless Chromium: a section per pool.
 * A burst against the second pool's slow prefill makes that pool's queue rise and drain on the page,
 * following the gateway's own {@code sluice_queue_depth{pool="slow"}} within a second, while the first
 * pool's stays empty; a decode of the second pool whose {@code /health} fails goes ejected and comes
 * back in that pool's worker table. Each section shows its own pool's limits in force (the two pools' differ)
 * and KV events (the second pool's prefill is a publisher, the first pool has none).
 */
class AdminStatusPagePoolsBrowserTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long LAG_MS = 1000; // the page's goal (docs/operations.md, "Status page")
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private SimCluster chat;
    private SimCluster slow;
    private GatewayServer gw;
    private ChromeDriver browser;

    @BeforeEach
    void start() throws Exception {
        chat = SimCluster.start(0, 1, 0, SimConfig.defaults().withHealthGeneration(false).withModel("chat-model")
                .withDecodeStep(Duration.ofMillis(1)), SimMode.UNIFIED);
        // the slow pool: one prefill at 2,000 tokens/s with a window of one request; each ~600-token prompt
        // holds it ~0.3 s, so a burst queues in the gateway and drains at ~3 requests a second
        slow = SimCluster.start(1, 2, 0, SimConfig.defaults().withHealthGeneration(false).withModel("slow-model")
                .withPrefillTokensPerSecond(2_000).withDecodeStep(Duration.ofMillis(1)).withDefaultMaxTokens(2),
                SimMode.SGLANG);
        gw = PdTestbed.startGateway("listen: {host: 127.0.0.1, port: 0}\nadmin: {port: 0}\n"
                + "health: {interval: 200ms}\n"
                + "timeouts: {connect: 2s, first_token: 60s, idle_stream: 60s}\n"
                + "pools:\n"
                + "  - name: chat\n    models: [chat-model]\n    disaggregation: none\n"
                + "    workers: {unified: [{url: " + chat.unified().get(0).url() + "}]}\n"
                + "    admission: {max_queued_requests: 12, max_pending_tokens: 30000}\n"
                + "  - name: slow\n    models: [slow-model]\n    disaggregation: sglang\n"
                + "    workers:\n"
                + "      prefill: [{url: " + slow.prefills().get(0).url() + ", bootstrap_port: "
                + slow.prefills().get(0).bootstrapPort() + "}]\n"
                + "      decode: [{url: " + slow.decodes().get(0).url() + "}, {url: " + slow.decodes().get(1).url() + "}]\n"
                + "    admission: {max_queued_requests: 64, max_pending_tokens: 200000, queue_timeout: 60s,\n"
                + "      prefill: {max_inflight_requests: 1, max_inflight_tokens: 100000},\n"
                + "      initial_prefill_tokens_per_second: 2000}\n"
                // the slow pool's prefill is named as a KV event publisher (at an address where none publishes):
                // the pool's section lists it under "KV events", the chat pool's has none
                + "    routing: {prefill: {policy: cache_aware}, kv_events: {endpoints: {\""
                + slow.prefills().get(0).url() + "\": \"tcp://127.0.0.1:1\"}}}\n");
        browser = HeadlessChromium.start();
    }

    @AfterEach
    void stop() throws Exception {
        try {
            if (browser != null) {
                browser.quit();
            }
        } finally {
            if (slow != null) {
                slow.decodes().forEach(d -> d.faults().reset());
            }
            for (AutoCloseable c : new AutoCloseable[]{gw, slow, chat}) {
                if (c != null) {
                    c.close();
                }
            }
        }
    }

    private String adminUrl(String path) {
        return "http://127.0.0.1:" + gw.adminPort() + path;
    }

    private String text(String css) {
        try {
            return browser.findElement(By.cssSelector(css)).getText();
        } catch (WebDriverException e) {
            return "-"; // not drawn yet, or redrawn between find and read
        }
    }

    /** Where the page shows limit {@code key} in {@code pool}'s section ("64 req"). */
    private static String limitCss(String pool, String key) {
        return "#pools section[data-pool='" + pool + "'] table.limits tr[data-limit='" + key + "'] td";
    }

    /** The page's value of limit {@code key} in {@code pool}'s section ("64 req"). */
    private String limit(String pool, String key) {
        return text(limitCss(pool, key));
    }

    /**
     * {@code css} shows {@code expected}, read again for up to 5 s: the page redraws on every update, and a
     * read between a redraw's removal and its drawing sees nothing ("-"), not a wrong value.
     */
    private void expectText(String css, String expected) throws InterruptedException {
        String[] last = {null};
        eventually(Duration.ofSeconds(5), () -> expected.equals(last[0] = text(css)));
        assertThat(last[0]).as(css).isEqualTo(expected);
    }

    private int pageQueue(String pool) {
        String t = text("#pools section[data-pool='" + pool + "'] .queue-queued");
        return t.equals("-") || t.isEmpty() ? -1 : Integer.parseInt(t);
    }

    /** {@code sluice_queue_depth{pool="slow"}} summed over the priority classes, from the admin /metrics. */
    private int metricQueue(String pool) throws Exception {
        String body = http.send(HttpRequest.newBuilder(URI.create(adminUrl("/metrics"))).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        double sum = 0;
        for (String line : body.split("\n")) {
            if (line.startsWith("sluice_queue_depth{") && line.contains("pool=\"" + pool + "\"")) {
                sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return (int) sum;
    }

    private record Sample(long nanos, int metric, int page, int otherPage) {
    }

    @Test
    void eachPoolHasItsSectionAndTheSecondPoolsQueueAndWorkerFollow() throws Exception {
        browser.get(adminUrl("/"));
        assertThat(eventually(Duration.ofSeconds(10), () -> pageQueue("slow") == 0 && pageQueue("chat") == 0))
                .as("the page drew a section per pool").isTrue();
        assertThat(browser.findElements(By.cssSelector("#pools section.pool")).stream()
                .map(e -> e.getAttribute("data-pool")).toList()).as("a section per pool, none for the gateway")
                .containsExactly("chat", "slow");
        assertThat(text("#pools section[data-pool='chat'] .pool-name")).isEqualToIgnoringCase("chat (default)");
        expectText("#pools section[data-pool='slow'] .queue-max", "64");
        expectText("#pools section[data-pool='chat'] .queue-max", "12");
        // each pool's own limits in force, in its own section
        expectText(limitCss("slow", "max_queued_requests"), "64 req");
        expectText(limitCss("chat", "max_queued_requests"), "12 req");
        expectText(limitCss("slow", "max_pending_tokens"), "200.0k tok");
        expectText(limitCss("chat", "max_pending_tokens"), "30.0k tok");
        expectText(limitCss("slow", "prefill_max_inflight_requests"), "1 req per prefill");
        assertThat(limit("chat", "prefill_max_inflight_requests")).isNotEqualTo("1 req per prefill");
        // and its own KV events: the slow pool's prefill, none in the chat pool
        assertThat(browser.findElement(By.cssSelector("#pools section[data-pool='slow'] .kv-events")).isDisplayed())
                .isTrue();
        assertThat(text("#pools section[data-pool='slow'] .kv-events tbody"))
                .contains(slow.prefills().get(0).url().substring("http://".length()));
        assertThat(browser.findElement(By.cssSelector("#pools section[data-pool='chat'] .kv-events")).isDisplayed())
                .isFalse();
        assertThat(browser.findElements(By.cssSelector("#pools section[data-pool='slow'] tr[data-pool='slow']")))
                .hasSize(3);
        assertThat(browser.findElements(By.cssSelector("#pools section[data-pool='chat'] tr[data-pool='chat']")))
                .hasSize(1);

        List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
        List<Sample> samples = new ArrayList<>();
        long t0 = System.nanoTime();
        int sent = 0;
        boolean drained = false;
        while (!drained && System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(60)) {
            if (sent < 24 && System.nanoTime() - t0 >= sent * 100_000_000L) {
                calls.add(http.sendAsync(PdTestbed.postRequest(URI.create("http://127.0.0.1:" + gw.port()
                        + "/v1/completions"), "{\"model\":\"slow-model\",\"max_tokens\":2,\"prompt\":\"burst" + sent
                        + " " + "abc ".repeat(600) + "\"}"), HttpResponse.BodyHandlers.ofString()));
                sent++;
            }
            int metric = metricQueue("slow");
            samples.add(new Sample(System.nanoTime(), metric, pageQueue("slow"), pageQueue("chat")));
            Sample last = samples.get(samples.size() - 1);
            drained = sent == 24 && calls.stream().allMatch(CompletableFuture::isDone) && last.page() == 0 && metric == 0;
            Thread.sleep(40);
        }
        for (CompletableFuture<HttpResponse<String>> c : calls) {
            assertThat(c.get().statusCode()).as(c.get().body()).isEqualTo(200);
        }
        assertThat(drained).as("the burst ended and the page shows the slow pool's queue empty").isTrue();
        assertThat(samples.stream().mapToInt(Sample::page).max().orElseThrow()).as("the page showed the queue rising")
                .isGreaterThanOrEqualTo(8);
        assertThat(samples.stream().map(Sample::page).filter(v -> v > 0).distinct().count())
                .as("many depths on the way up and down").isGreaterThanOrEqualTo(6);
        assertThat(samples).as("the chat pool's queue stayed empty").allSatisfy(s -> assertThat(s.otherPage()).isZero());
        for (Sample s : samples) {
            int lo = Integer.MAX_VALUE;
            int hi = Integer.MIN_VALUE;
            for (Sample m : samples) {
                if (m.nanos() <= s.nanos() && s.nanos() - m.nanos() <= TimeUnit.MILLISECONDS.toNanos(LAG_MS)) {
                    lo = Math.min(lo, m.metric());
                    hi = Math.max(hi, m.metric());
                }
            }
            assertThat(s.page()).as("page at +%d ms vs the slow pool's metric in the second before",
                    TimeUnit.NANOSECONDS.toMillis(s.nanos() - t0)).isBetween(lo - 1, hi + 1);
        }

        // a decode of the slow pool fails its /health: ejected in that pool's table, then back
        DecodeServer sick = slow.decodes().get(1);
        sick.faults().setHealthStatus(503);
        long ejected = awaitShown(sick.url(), "ejected");
        sick.faults().reset();
        long back = awaitShown(sick.url(), "healthy");
        org.slf4j.LoggerFactory.getLogger(AdminStatusPagePoolsBrowserTest.class).info(
                "admin page, second pool: samples={} peak={} ejected_seen_ms={} healthy_seen_ms={}", samples.size(),
                samples.stream().mapToInt(Sample::page).max().orElseThrow(), ejected, back);
    }

    /**
     * Waits for /admin/state to put the slow pool's worker {@code url} in {@code state}; the page must follow
     * within LAG_MS. Returns how long after the test saw the change the page showed it (ms).
     */
    private long awaitShown(String url, String state) throws Exception {
        assertThat(eventually(Duration.ofSeconds(20), () -> state.equals(stateOf(url)))).as("%s becomes %s", url, state)
                .isTrue();
        long changedAt = System.nanoTime();
        String row = "#pools section[data-pool='slow'] tr[data-url='" + url + "']";
        while (System.nanoTime() - changedAt < TimeUnit.SECONDS.toNanos(5) && !state.equals(attribute(row, "data-state"))) {
            Thread.sleep(20);
        }
        long seen = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - changedAt);
        assertThat(attribute(row, "data-state")).as("the page shows %s %s", url, state).isEqualTo(state);
        assertThat(attribute(row, "data-pool")).isEqualTo("slow");
        assertThat(text(row + " td.pool")).isEqualTo("slow");
        assertThat(seen).as("seen on the page after the gateway changed it (ms)").isLessThanOrEqualTo(LAG_MS);
        return seen;
    }

    private String stateOf(String url) {
        try {
            JsonNode s = JSON.readTree(http.send(HttpRequest.newBuilder(URI.create(adminUrl("/admin/state"))).build(),
                    HttpResponse.BodyHandlers.ofString()).body());
            for (JsonNode p : s.path("pools")) {
                for (JsonNode w : p.path("workers")) {
                    if (p.path("name").asText().equals("slow") && w.path("url").asText().equals(url)) {
                        return w.path("state").asText();
                    }
                }
            }
            return null;
        } catch (Exception e) {
            return null;
        }
    }

    private String attribute(String css, String name) {
        try {
            WebElement e = browser.findElement(By.cssSelector(css));
            return e.getAttribute(name);
        } catch (WebDriverException e) {
            return null; // redrawn between find and read: the next poll reads it again
        }
    }
}
