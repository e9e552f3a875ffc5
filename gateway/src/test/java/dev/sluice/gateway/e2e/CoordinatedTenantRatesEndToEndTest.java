package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.CoordinatedFleet;
import dev.sluice.gateway.testing.PdTestbed;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Issue 20's tenant rates, in one process: three coordinated gateways on one simulated cluster and
 * a real redis-server. Tenant {@code spread} sends to all three, far over its rate: the tokens the
 * fleet serves it in a window are its configured rate, not three times it. Tenant {@code solo},
 * at the same time, sends to one gateway only: it gets (nearly) its whole rate there.
 */
class CoordinatedTenantRatesEndToEndTest {
    private static final Logger log = LoggerFactory.getLogger(CoordinatedTenantRatesEndToEndTest.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long SPREAD_PER_MINUTE = 24_000; // 400 tokens/s for the fleet: about 2 requests/s
    private static final long SOLO_PER_MINUTE = 12_000; // 200 tokens/s
    private static final Duration WINDOW = Duration.ofSeconds(20);
    /** How far from the configured rate the fleet's may be over the window (a request or two at its ends, a renewal's shift). */
    private static final double TOLERANCE = 0.25;

    @TempDir
    Path dir;
    private CoordinatedFleet fleet;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private ScheduledExecutorService load;

    @BeforeEach
    void start() throws Exception {
        fleet = CoordinatedFleet.start(dir.resolve("redis"), 1, 200_000);
    }

    @AfterEach
    void stop() throws Exception {
        if (load != null) {
            load.shutdownNow();
        }
        fleet.close();
    }

    private GatewayServer gateway(String id) throws Exception {
        return fleet.gateway(fleet.workersYaml()
                + "timeouts: {connect: 2s, first_token: 60s, idle_stream: 60s}\n"
                + "health: {interval: 200ms, timeout: 3s}\ntelemetry: {interval: 200ms}\nadmin: {port: 0}\n"
                + "admission:\n  max_queued_requests: 16\n  queue_timeout: 30s\n"
                + "  tenant_limits:\n    per_tenant:\n"
                + "      spread: {tokens_per_minute: " + SPREAD_PER_MINUTE + "}\n"
                + "      solo: {tokens_per_minute: " + SOLO_PER_MINUTE + "}\n"
                + fleet.coordinationYaml(id, "4s"));
    }

    /** One tenant's traffic to one gateway: every response, when it came, with the tokens it cost (prompt + completion). */
    private static final class Stream {
        final String tenant;
        final GatewayServer gateway;
        final ConcurrentLinkedQueue<long[]> served = new ConcurrentLinkedQueue<>(); // {nanoTime, tokens, latency}
        final AtomicInteger limited = new AtomicInteger();
        final AtomicLong lastLimited = new AtomicLong(Long.MIN_VALUE); // when the last tenant_rate_limited came
        final ConcurrentLinkedQueue<Long> other = new ConcurrentLinkedQueue<>(); // when an answer was neither

        final AtomicInteger outstanding = new AtomicInteger();

        Stream(String tenant, GatewayServer gateway) {
            this.tenant = tenant;
            this.gateway = gateway;
        }

        /** Served in the window: how many, and the longest wait (ms) of one. */
        String servedBetween(long from, long to) {
            return served.stream().filter(s -> s[0] >= from && s[0] < to).count() + "x/max"
                    + served.stream().filter(s -> s[0] >= from && s[0] < to).mapToLong(s -> s[2] / 1_000_000).max()
                    .orElse(0) + "ms";
        }

        long tokensBetween(long from, long to) {
            return served.stream().filter(s -> s[0] >= from && s[0] < to).mapToLong(s -> s[1]).sum();
        }
    }

    /** Offers a request every 100 ms (open loop: far more than the rate), whatever the answers. */
    private void offer(Stream s, AtomicLong seq) {
        load.scheduleAtFixedRate(() -> {
            String body = "{\"text\":\"" + s.tenant + " " + seq.incrementAndGet() + " " + "abc ".repeat(200)
                    + "\",\"sampling_params\":{\"max_new_tokens\":2}}";
            s.outstanding.incrementAndGet();
            long sent = System.nanoTime();
            http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.gateway.port() + "/generate"))
                            .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                            .header("X-Sluice-Tenant", s.tenant).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                    HttpResponse.BodyHandlers.ofString()).whenComplete((r, e) -> {
                        try {
                            if (e == null && r.statusCode() == 200) {
                                JsonNode meta = JSON.readTree(r.body()).path("meta_info");
                                s.served.add(new long[] {System.nanoTime(), meta.path("prompt_tokens").asLong()
                                        + meta.path("completion_tokens").asLong(), System.nanoTime() - sent});
                            } else if (e == null && r.statusCode() == 429 && r.body().contains("tenant_rate_limited")) {
                                s.limited.incrementAndGet();
                                s.lastLimited.accumulateAndGet(System.nanoTime(), Math::max);
                            } else {
                                s.other.add(System.nanoTime());
                                log.warn("unexpected answer tenant={} status={} error={}", s.tenant,
                                        e == null ? r.statusCode() : -1, e == null ? r.body() : e.toString());
                            }
                        } catch (Exception parse) {
                            s.other.add(System.nanoTime());
                        } finally {
                            s.outstanding.decrementAndGet();
                        }
                    });
        }, 0, 100, TimeUnit.MILLISECONDS);
    }

    private static long grant(GatewayServer g, String tenant) {
        return g.coordination().orElseThrow().grants().getOrDefault("tenant_tokens|" + tenant, -1L);
    }

    @Test
    void aTenantSpreadOverThreeReplicasGetsItsRateOnceAndOneOnOneReplicaGetsItWhole() throws Exception {
        List<GatewayServer> three = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            three.add(gateway("gw-" + i));
        }
        assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> three.stream()
                .allMatch(g -> g.coordination().orElseThrow().up() && g.coordination().orElseThrow().replicas() == 3)))
                .isTrue();
        load = Executors.newScheduledThreadPool(2);
        AtomicLong seq = new AtomicLong();
        List<Stream> spread = new ArrayList<>();
        for (GatewayServer g : three) {
            Stream s = new Stream("spread", g);
            spread.add(s);
            offer(s, seq);
        }
        Stream solo = new Stream("solo", three.get(0));
        offer(solo, seq);

        // warm-up: every replica leases its part of spread's rate, and has spent what its bucket held at first
        // (each bucket starts with a minute's worth of its share: on a busy machine that takes a while to spend)
        assertThat(PdTestbed.eventually(Duration.ofSeconds(60), () -> three.stream().allMatch(g -> grant(g, "spread") > 0)
                && three.stream().mapToLong(g -> grant(g, "spread")).sum() >= SPREAD_PER_MINUTE * 9 / 10
                && spread.stream().allMatch(s -> s.limited.get() > 0)
                && grant(three.get(0), "solo") == SOLO_PER_MINUTE && solo.limited.get() > 0))
                .as("leased: %s", three.stream().map(g -> g.coordination().orElseThrow().grants()).toList()).isTrue();

        // and has spent what its bucket held before (a minute's worth of rate / N, or of a first grant that
        // was larger than the split): refused for its rate again now that every grant is positive, its
        // bucket was in debt then, and an open loop keeps it spending whatever refills
        long converged = System.nanoTime();
        assertThat(PdTestbed.eventually(Duration.ofSeconds(60), () -> spread.stream().allMatch(s -> s.lastLimited.get()
                > converged) && solo.lastLimited.get() > converged))
                .as("every stream refused for its rate after the leases converged").isTrue();

        long from = System.nanoTime();
        long to = from + WINDOW.toNanos();
        AtomicLong maxSpreadGrants = new AtomicLong();
        AtomicLong minSoloGrant = new AtomicLong(Long.MAX_VALUE);
        AtomicLong minSpreadGrants = new AtomicLong(Long.MAX_VALUE);
        List<String> trace = java.util.Collections.synchronizedList(new ArrayList<>());
        load.scheduleAtFixedRate(() -> trace.add(three.stream().map(g -> String.valueOf(grant(g, "spread")))
                .collect(java.util.stream.Collectors.joining("/"))), 0, 500, TimeUnit.MILLISECONDS);
        load.scheduleAtFixedRate(() -> {
            minSpreadGrants.accumulateAndGet(three.stream().mapToLong(g -> grant(g, "spread")).sum(), Math::min);
            maxSpreadGrants.accumulateAndGet(three.stream().mapToLong(g -> grant(g, "spread")).sum(), Math::max);
            if (System.nanoTime() < to) {
                minSoloGrant.accumulateAndGet(grant(three.get(0), "solo"), Math::min);
            }
        }, 0, 20, TimeUnit.MILLISECONDS);
        // the measurement window is time itself: wait it out, and a second more for its last answers
        assertThat(PdTestbed.eventually(WINDOW.plusSeconds(5), () -> System.nanoTime() >= to + 1_000_000_000L)).isTrue();
        load.shutdown();
        assertThat(load.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
        assertThat(PdTestbed.eventually(Duration.ofSeconds(30), () -> spread.stream().allMatch(s -> s.outstanding.get() == 0)
                && solo.outstanding.get() == 0)).isTrue();

        double minutes = WINDOW.toNanos() / 60e9;
        long spreadTokens = spread.stream().mapToLong(s -> s.tokensBetween(from, to)).sum();
        long soloTokens = solo.tokensBetween(from, to);
        long spreadExpected = (long) (SPREAD_PER_MINUTE * minutes);
        long soloExpected = (long) (SOLO_PER_MINUTE * minutes);
        log.info("tenant_rates window_s={} spread_tokens={} spread_expected={} spread_by_replica={} solo_tokens={} "
                        + "solo_expected={} spread_grants_max={} spread_grants_min={} solo_grant_min={} "
                        + "limited_spread={} limited_solo={} spread_served={} spread_grants_every_500ms={}",
                WINDOW.toSeconds(), spreadTokens, spreadExpected,
                spread.stream().map(s -> s.tokensBetween(from, to)).toList(), soloTokens, soloExpected,
                maxSpreadGrants.get(), minSpreadGrants.get(), minSoloGrant.get(),
                spread.stream().map(s -> s.limited.get()).toList(), solo.limited.get(),
                spread.stream().map(s -> s.servedBetween(from, to)).toList(), trace);

        assertThat(spread.stream().mapToLong(s -> s.other.stream().filter(t -> t >= from).count()).sum()
                + solo.other.stream().filter(t -> t >= from).count())
                .as("in the window, every answer a 200 or a tenant_rate_limited 429").isZero();
        assertThat(maxSpreadGrants.get()).as("the grants never add up to more than the rate").isLessThanOrEqualTo(SPREAD_PER_MINUTE);
        assertThat(spreadTokens).as("the fleet serves spread its rate, not 3 x it (%d)", 3 * spreadExpected)
                .isBetween((long) (spreadExpected * (1 - TOLERANCE)), (long) (spreadExpected * (1 + TOLERANCE)));
        assertThat(spread).as("every replica served spread").allSatisfy(s -> assertThat(s.tokensBetween(from, to)).isPositive());
        assertThat(minSoloGrant.get()).as("solo, on one replica only, leases its whole rate there").isEqualTo(SOLO_PER_MINUTE);
        assertThat(soloTokens).as("and is served it")
                .isBetween((long) (soloExpected * (1 - TOLERANCE)), (long) (soloExpected * (1 + TOLERANCE)));

        for (GatewayServer g : three) {
            assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> g.admission().snapshot().idle()
                    && g.liveRequests() == 0 && g.workers().all().stream().allMatch(w -> w.inflight() == 0)))
                    .as("back to zero: %s", g.admission().snapshot()).isTrue();
        }
        JsonNode state = JSON.readTree(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + three.get(0).adminPort() + "/admin/state")).build(), HttpResponse.BodyHandlers.ofString()).body());
        assertThat(state.path("coordination").path("grants").path("tenant_tokens|solo").asLong())
                .as("/admin/state shows the tenant's lease").isEqualTo(SOLO_PER_MINUTE);
    }
}
