package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.TokenizerConfig;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

final class AdmissionFixtures {
    private AdmissionFixtures() {
    }

    /**
     * Windows counted in requests and tokens only ({@code prefill.max_inflight_time: 0s}): what most
     * tests here are about; the window in time has its own (PrefillTimeWindowTest).
     */
    static AdmissionConfig config(int maxQueued, long maxPending, Duration queueTimeout, long maxRequest,
                                  int prefillRequests, long prefillTokens, int decodeStreams) {
        return withTimeWindow(withDefaultTimeWindow(maxQueued, maxPending, queueTimeout, maxRequest, prefillRequests,
                prefillTokens, decodeStreams), Duration.ZERO);
    }

    static AdmissionConfig withTimeWindow(AdmissionConfig c, Duration window) {
        // the record's own constructor: some tests here use limits the builder's cross-checks refuse
        return new AdmissionConfig(c.maxQueuedRequests(), c.maxPendingTokens(), c.queueTimeout(), c.maxRequestTokens(),
                c.prefillMaxInflightRequests(), c.prefillMaxInflightTokens(), c.decodeMaxInflightStreams(),
                c.initialPrefillTokensPerSecond(), c.retryAfterMin(), c.retryAfterMax(), c.drainGrace(), c.priorities(),
                c.defaultPriority(), c.apiKeys(), c.requireApiKey(), c.tenantLimits(), c.tokenizer(), c.scheduling(),
                c.prefillRate(), window);
    }

    /** The same limits with {@code prefill.max_inflight_time} at its default. */
    static AdmissionConfig withDefaultTimeWindow(int maxQueued, long maxPending, Duration queueTimeout, long maxRequest,
                                                 int prefillRequests, long prefillTokens, int decodeStreams) {
        return new AdmissionConfig(maxQueued, maxPending, queueTimeout, maxRequest, prefillRequests, prefillTokens,
                decodeStreams, 10_000, Duration.ofSeconds(1), Duration.ofSeconds(60), Duration.ofSeconds(30),
                List.of("high", "normal", "low"), "normal", Map.of(),
                new TokenizerConfig(Optional.empty(), 4.0, 4, 1));
    }

    static WorkerSet workers(int prefill, int decode) {
        List<WorkerEndpoint> p = new ArrayList<>();
        List<WorkerEndpoint> d = new ArrayList<>();
        for (int i = 0; i < prefill; i++) {
            p.add(new WorkerEndpoint("http://10.0.0." + i + ":30000", "10.0.0." + i, 30000, 8998));
        }
        for (int i = 0; i < decode; i++) {
            d.add(new WorkerEndpoint("http://10.0.1." + i + ":30001", "10.0.1." + i, 30001, null));
        }
        WorkerSet set = new WorkerSet(new WorkersConfig(p, d));
        set.all().forEach(w -> w.status(new dev.sluice.gateway.routing.WorkerStatus(dev.sluice.gateway.routing.WorkerState.HEALTHY, "", java.time.Instant.now())));
        return set;
    }

    /** Records how a ticket's wait ended. */
    static final class Recorder implements TicketListener {
        volatile Worker prefill;
        volatile Worker decode;
        volatile Rejection rejection;
        final java.util.concurrent.atomic.AtomicInteger endings = new java.util.concurrent.atomic.AtomicInteger();

        @Override
        public void granted(Worker p, Worker d) {
            prefill = p;
            decode = d;
            endings.incrementAndGet();
        }

        @Override
        public void rejected(Rejection r) {
            rejection = r;
            endings.incrementAndGet();
        }

        boolean granted() {
            return prefill != null;
        }
    }
}
