package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.testing.HeadlessChromium;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.SimConfig;
import java.net.URI;
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
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.WebDriverException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.logging.LogEntry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin status page in a real browser (headless Chromium through Selenium) while the gateway
 * works: a burst against a slow prefill makes the queue rise and drain, and the page has to follow
 * the gateway's own {@code sluice_queue_depth} within a second; a decode whose {@code /health}
 * fails goes ejected and comes back, and the page has to show both within a second. The page polls
 * {@code /admin/state} every 500 ms, so a second is its poll interval with room to spare.
 */
class AdminStatusPageBrowserTest {
    private static final Logger log = LoggerFactory.getLogger(AdminStatusPageBrowserTest.class);
    /** The goal: what the page shows is never older than this (docs/operations.md, "Status page"). */
    private static final long LAG_MS = 1000;

    private PdTestbed bed;
    private ChromeDriver browser;

    @BeforeEach
    void start() throws Exception {
        // one prefill at 2,000 tokens/s with a window of one request: each ~600-token prompt holds it
        // ~0.3 s, so a burst queues in the gateway and drains at ~3 requests a second
        bed = PdTestbed.start(1, 2, SimConfig.defaults().withPrefillTokensPerSecond(2_000)
                        .withDecodeStep(Duration.ofMillis(1)).withDefaultMaxTokens(2),
                "{connect: 2s, first_token: 60s, idle_stream: 60s}", """
                        admission:
                          max_queued_requests: 64
                          max_pending_tokens: 200000
                          queue_timeout: 60s
                          prefill: { max_inflight_requests: 1, max_inflight_tokens: 100000 }
                          initial_prefill_tokens_per_second: 2000
                        """);
        browser = HeadlessChromium.start();
    }

    @AfterEach
    void stop() throws Exception {
        try {
            if (browser != null) {
                browser.quit();
            }
        } finally {
            if (bed != null) {
                bed.healAndClose();
            }
        }
    }

    private String adminUrl(String path) {
        return "http://127.0.0.1:" + bed.gateway.adminPort() + path;
    }

    private String text(String css) {
        try {
            return browser.findElement(By.cssSelector(css)).getText();
        } catch (WebDriverException e) {
            return "-"; // not drawn yet (the sections come with the first answer), or redrawn between find and read
        }
    }

    /** The gateway's own figure: {@code sluice_queue_depth} summed over the priority classes, from the admin /metrics. */
    private int metricQueue() throws Exception {
        String body = bed.http.send(HttpRequest.newBuilder(URI.create(adminUrl("/metrics"))).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        double sum = 0;
        for (String line : body.split("\n")) {
            if (line.startsWith("sluice_queue_depth{")) {
                sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return (int) sum;
    }

    private int pageQueue() {
        String t = text("#pools section[data-pool=''] .queue-queued");
        return t.equals("-") || t.isEmpty() ? -1 : Integer.parseInt(t);
    }

    private static String generate(int tokens, String tag) {
        return "{\"text\":\"" + tag + " " + "abc ".repeat(tokens) + "\",\"sampling_params\":{\"max_new_tokens\":2}}";
    }

    private record Sample(long nanos, int metric, int page) {
    }

    @Test
    void thePageFollowsABurstsQueueAndAWorkersEjectionWithinASecond() throws Exception {
        browser.get(adminUrl("/"));
        assertThat(eventually(Duration.ofSeconds(10), () -> pageQueue() == 0)).as("the page drew its first state")
                .isTrue();
        assertThat(browser.findElements(By.cssSelector("#pools section[data-pool=''] table.workers tbody tr[data-worker]"))).hasSize(3);
        assertThat(browser.findElements(By.cssSelector("#pools section.pool"))).as("one section: the gateway's").hasSize(1);
        assertThat(browser.findElement(By.cssSelector("#pools section[data-pool=''] h2.pool-heading")).isDisplayed())
                .as("no pool heading without pools").isFalse();
        assertThat(text("#pools section[data-pool=''] table.limits tr[data-limit='max_queued_requests'] td"))
                .isEqualTo("64 req");
        assertThat(text("#pools section[data-pool=''] table.limits tr[data-limit='early_rejection'] td")).isEqualTo("on");

        // the burst: 24 requests, one every 100 ms (10 a second against a drain of ~3): the queue rises, then drains
        List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
        List<Sample> samples = new ArrayList<>();
        long t0 = System.nanoTime();
        int sent = 0;
        boolean drained = false;
        while (!drained && System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(60)) {
            if (sent < 24 && System.nanoTime() - t0 >= sent * 100_000_000L) {
                calls.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/generate"), generate(600, "burst" + sent)),
                        HttpResponse.BodyHandlers.ofString()));
                sent++;
            }
            int metric = metricQueue();
            int page = pageQueue();
            samples.add(new Sample(System.nanoTime(), metric, page));
            drained = sent == 24 && calls.stream().allMatch(CompletableFuture::isDone) && page == 0 && metric == 0;
            Thread.sleep(40);
        }
        for (CompletableFuture<HttpResponse<String>> c : calls) {
            assertThat(c.get().statusCode()).as(c.get().body()).isEqualTo(200);
        }
        assertThat(drained).as("the burst ended and the page shows an empty queue").isTrue();

        int peak = samples.stream().mapToInt(Sample::page).max().orElseThrow();
        assertThat(peak).as("the page showed the queue rising").isGreaterThanOrEqualTo(8);
        assertThat(samples.stream().map(Sample::page).filter(v -> v > 0).distinct().count())
                .as("the page showed the queue at many depths on its way up and down, not one jump")
                .isGreaterThanOrEqualTo(6);
        // every value the page showed, the gateway's metric held during the second before it (one request
        // of slack: the queue can go up and down between two reads of the metric)
        List<Long> lags = new ArrayList<>();
        for (int i = 0; i < samples.size(); i++) {
            Sample s = samples.get(i);
            int lo = Integer.MAX_VALUE;
            int hi = Integer.MIN_VALUE;
            for (Sample m : samples) {
                if (m.nanos() <= s.nanos() && s.nanos() - m.nanos() <= TimeUnit.MILLISECONDS.toNanos(LAG_MS)) {
                    lo = Math.min(lo, m.metric());
                    hi = Math.max(hi, m.metric());
                }
            }
            assertThat(s.page()).as("page at +%d ms vs the metric in the second before: %s",
                    TimeUnit.NANOSECONDS.toMillis(s.nanos() - t0), samples).isBetween(lo - 1, hi + 1);
            if (s.page() > 0 || s.metric() > 0) { // while there is a queue to follow
                lastHeld(samples, i).ifPresent(at -> lags.add(TimeUnit.NANOSECONDS.toMillis(s.nanos() - at)));
            }
        }
        // the empty queue at the end: the metric's first 0 after the peak to the page's
        long metricZero = firstAfterPeak(samples, true);
        long pageZero = firstAfterPeak(samples, false);
        assertThat(TimeUnit.NANOSECONDS.toMillis(pageZero - metricZero)).as("page shows the drained queue")
                .isLessThanOrEqualTo(LAG_MS);
        List<Long> sorted = lags.stream().sorted().toList();
        // the age of what the page showed: 0 when the metric read just before held the same value (a figure, not
        // a bound: a value the page caught between two reads of the metric matches an older read, or none)
        log.info("admin page queue age against sluice_queue_depth: samples={} matched={} peak={} median_ms={} "
                        + "p95_ms={} drained_ms={}", samples.size(), lags.size(), peak, sorted.get(sorted.size() / 2),
                sorted.get(sorted.size() * 95 / 100), TimeUnit.NANOSECONDS.toMillis(pageZero - metricZero));

        // a decode's /health fails: ejected, then back
        DecodeServer sick = bed.cluster.decodes().get(1);
        Worker w = bed.gateway.workers().all().stream().filter(x -> x.url().equals(sick.url())).findFirst().orElseThrow();
        sick.faults().setHealthStatus(503);
        long ejectedLag = awaitShown(w, WorkerState.EJECTED);
        sick.faults().reset();
        long backLag = awaitShown(w, WorkerState.HEALTHY);
        log.info("admin page worker state lag: ejected_ms={} healthy_ms={}", ejectedLag, backLag);

        // a rejection shows with its reason
        assertThat(bed.post("/generate", "{\"nope\":1}").statusCode()).isEqualTo(400);
        assertThat(eventually(Duration.ofSeconds(2), () -> text("#errors tbody").contains("missing_prompt")))
                .as("recent errors: %s", text("#errors tbody")).isTrue();

        assertNothingFetchedFromElsewhereAndNoConsoleErrors();
    }

    /**
     * How old what the page shows in sample {@code i} is: the last read of the metric, up to that sample,
     * that held the same value (empty if none did: a value the queue passed between two reads of the metric).
     */
    private static java.util.Optional<Long> lastHeld(List<Sample> samples, int i) {
        for (int j = i; j >= 0; j--) {
            if (samples.get(j).metric() == samples.get(i).page()) {
                return java.util.Optional.of(samples.get(j).nanos());
            }
        }
        return java.util.Optional.empty();
    }

    private static long firstAfterPeak(List<Sample> samples, boolean metric) {
        boolean seenPeak = false;
        for (Sample s : samples) {
            int v = metric ? s.metric() : s.page();
            seenPeak |= v >= 4;
            if (seenPeak && v == 0) {
                return s.nanos();
            }
        }
        throw new AssertionError("never back to 0 after the peak: " + samples);
    }

    /**
     * Waits for the gateway to put {@code w} in {@code state}, then for the page to show it; both must
     * be within {@link #LAG_MS}: as the test saw them, and as the page says it drew it (its
     * {@code data-state-shown-at}, against the state's own {@code since}). Returns the page's lag.
     */
    private long awaitShown(Worker w, WorkerState state) throws Exception {
        assertThat(eventually(Duration.ofSeconds(20), () -> w.state() == state)).as("%s becomes %s", w, state).isTrue();
        long changedAt = System.nanoTime();
        long changedEpochMs = w.status().since().toEpochMilli();
        String row = "#pools section[data-pool=''] tr[data-url='" + w.url() + "']";
        long deadline = changedAt + TimeUnit.SECONDS.toNanos(5);
        while (System.nanoTime() < deadline && !state.label().equals(attribute(row, "data-state"))) {
            Thread.sleep(20);
        }
        long seen = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - changedAt);
        assertThat(attribute(row, "data-state")).as("the page shows %s %s", w.name(), state.label())
                .isEqualTo(state.label());
        assertThat(text(row + " td.state")).startsWith(state.label());
        long drawnLag = Long.parseLong(attribute(row, "data-state-shown-at")) - changedEpochMs;
        assertThat(seen).as("seen on the page after the gateway changed it (ms)").isLessThanOrEqualTo(LAG_MS);
        assertThat(drawnLag).as("drawn by the page after the gateway changed it (ms)").isLessThanOrEqualTo(LAG_MS);
        return drawnLag;
    }

    private String attribute(String css, String name) {
        try {
            WebElement e = browser.findElement(By.cssSelector(css));
            return e.getAttribute(name);
        } catch (WebDriverException e) {
            return null; // redrawn between find and read: the next poll reads it again
        }
    }

    private void assertNothingFetchedFromElsewhereAndNoConsoleErrors() {
        @SuppressWarnings("unchecked")
        List<String> resources = (List<String>) ((JavascriptExecutor) browser).executeScript(
                "return performance.getEntriesByType('resource').map(e => e.name)");
        String origin = adminUrl("");
        assertThat(resources).isNotEmpty().allSatisfy(r -> assertThat(r).startsWith(origin + "/"));
        List<String> errors = browser.manage().logs().get("browser").getAll().stream()
                .filter(e -> e.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue())
                .map(LogEntry::toString).toList();
        assertThat(errors).as("the browser's console (a CSP violation would show here)").isEmpty();
    }
}
