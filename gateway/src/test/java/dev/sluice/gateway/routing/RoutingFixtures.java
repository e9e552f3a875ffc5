package dev.sluice.gateway.routing;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Healthy workers and a settable load view for the routing policy tests. */
final class RoutingFixtures {
    private RoutingFixtures() {
    }

    static List<Worker> workers(WorkerRole role, int n) {
        List<Worker> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Worker w = new Worker(role, new WorkerEndpoint("http://10.0.0." + i + ":30000", "10.0.0." + i, 30000, null));
            w.status(new WorkerStatus(WorkerState.HEALTHY, "", Instant.now()));
            out.add(w);
        }
        return out;
    }

    static RoutingRequest request(String key, long tokens) {
        return new RoutingRequest(key, tokens);
    }

    /** An input to the policies, set by each test; unknown telemetry is NaN as in production. */
    static final class FakeLoad implements LoadView {
        final Map<Worker, Long> tokens = new HashMap<>();
        final Map<Worker, Integer> requests = new HashMap<>();
        final Map<Worker, Double> queue = new HashMap<>();
        final Map<Worker, Double> kv = new HashMap<>();
        final Map<Worker, Double> promptTokens = new HashMap<>();

        FakeLoad tokens(Worker w, long t) {
            tokens.put(w, t);
            return this;
        }

        FakeLoad requests(Worker w, int r) {
            requests.put(w, r);
            return this;
        }

        FakeLoad queue(Worker w, double q) {
            queue.put(w, q);
            return this;
        }

        FakeLoad kv(Worker w, double k) {
            kv.put(w, k);
            return this;
        }

        FakeLoad promptTokens(Worker w, double counter) {
            promptTokens.put(w, counter);
            return this;
        }

        @Override
        public long windowTokens(Worker w) {
            return tokens.getOrDefault(w, 0L);
        }

        @Override
        public int windowRequests(Worker w) {
            return requests.getOrDefault(w, 0);
        }

        @Override
        public double reportedQueue(Worker w) {
            return queue.getOrDefault(w, Double.NaN);
        }

        @Override
        public double kvUsage(Worker w) {
            return kv.getOrDefault(w, Double.NaN);
        }

        @Override
        public double reportedPromptTokens(Worker w) {
            return promptTokens.getOrDefault(w, Double.NaN);
        }
    }
}
