package dev.sluice.gateway.routing;

import java.util.List;

/**
 * How loaded each candidate looks to the policies of one role; shared by least_load,
 * power_of_two and cache_aware so that they agree on what "least loaded" means.
 *
 * <p>Prefill (and unified) workers: {@code windowTokens + max(0, reportedQueue - windowRequests)
 * x tokensPerRequest}. The worker's reported queue already contains the gateway's own
 * dispatched-but-not-prefilled requests (they are in the window), so only the part beyond the
 * window is added: the work other gateway replicas or direct clients put there. It is converted
 * to tokens with the mean prompt size of the requests in the candidates' windows plus this one
 * ({@code (sum windowTokens + request.tokens) / (sum windowRequests + 1)}, at least 1), which needs
 * no constant and follows the traffic. An unknown (NaN) queue adds nothing.
 *
 * <p>Decode workers: {@code (windowRequests + 1) x (1 + kvUsage)}, kvUsage 0 when unknown. The
 * "+ 1" scores the worker as it would be with this stream added, so that KV usage still separates
 * workers that hold no stream of ours yet (another gateway's streams fill KV too).
 */
final class WorkerLoad {
    private final boolean decode;

    WorkerLoad(WorkerRole role) {
        this.decode = role == WorkerRole.DECODE;
    }

    boolean decode() {
        return decode;
    }

    /** The load score of every candidate, index for index. */
    double[] scores(List<Worker> candidates, RoutingRequest request, LoadView view) {
        int n = candidates.size();
        double[] out = new double[n];
        if (decode) {
            for (int i = 0; i < n; i++) {
                Worker w = candidates.get(i);
                double kv = view.kvUsage(w);
                out[i] = (view.windowRequests(w) + 1.0) * (1.0 + (Double.isNaN(kv) ? 0 : Math.max(0, kv)));
            }
            return out;
        }
        long tokens = Math.max(0, request.tokens());
        long requests = 1;
        for (Worker w : candidates) {
            tokens += view.windowTokens(w);
            requests += view.windowRequests(w);
        }
        double perRequest = Math.max(1.0, (double) tokens / requests);
        for (int i = 0; i < n; i++) {
            Worker w = candidates.get(i);
            double queue = view.reportedQueue(w);
            double beyondWindow = Double.isNaN(queue) ? 0 : Math.max(0, queue - view.windowRequests(w));
            out[i] = view.windowTokens(w) + beyondWindow * perRequest;
        }
        return out;
    }

    /**
     * Index of the smallest score; among equal ones the first met scanning cyclically from
     * {@code start}, so that a caller advancing {@code start} past each pick alternates ties.
     */
    static int argMin(double[] scores, int start) {
        int n = scores.length;
        int first = Math.floorMod(start, n);
        int best = first;
        for (int k = 1; k < n; k++) {
            int i = (first + k) % n;
            if (scores[i] < scores[best]) {
                best = i;
            }
        }
        return best;
    }
}
