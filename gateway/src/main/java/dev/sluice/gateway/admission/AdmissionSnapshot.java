package dev.sluice.gateway.admission;

import dev.sluice.gateway.routing.Worker;
import java.util.List;
import java.util.Map;

/**
 * A consistent view of admission state, for metrics, the admin view and tests.
 * {@code prefillTokensPerSecond} is the cluster's rate; {@code throughputMeasured} says whether it
 * is trusted (every available prefill worker measured or given a prior), which turns the deadline
 * checks on; {@code predictionSlackSeconds} is the margin they leave (how much later than predicted
 * prefills have been finishing, {@link PredictionSlack}); {@code doorMarginPerSecond} is the margin a
 * newcomer is judged with at the door per second of prefill ahead of it (two of the rate's relative
 * spreads, {@link RateSpread}).
 */
public record AdmissionSnapshot(int queued, int[] queuedByClass, List<Map<String, Integer>> queuedTenantsByClass,
                                long pendingTokens, long inflightPrefillTokens, int dispatched,
                                double prefillTokensPerSecond, boolean throughputMeasured, boolean draining,
                                Map<Worker, WorkerWindow> perWorker, Map<Worker, PrefillRate> prefillRates,
                                double predictionSlackSeconds, double doorMarginPerSecond) {

    /**
     * One prefill worker's rate as admission uses it, and where it comes from: {@code measured},
     * {@code configured}, {@code telemetry}, {@code state_file} (priors), or {@code guess}.
     */
    public record PrefillRate(double tokensPerSecond, String source) {
    }

    /** Everything is back to zero: nothing queued, pending or in flight. */
    public boolean idle() {
        return queued == 0 && pendingTokens == 0 && inflightPrefillTokens == 0 && dispatched == 0
                && perWorker.values().stream().allMatch(WorkerWindow::idle);
    }
}
