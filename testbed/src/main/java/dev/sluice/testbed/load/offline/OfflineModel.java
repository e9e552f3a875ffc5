package dev.sluice.testbed.load.offline;

/**
 * The service model the offline schedule assumes. One prefill server, non-preemptive, at
 * {@code prefillTokensPerSecond}, no prefix-cache hits (the benchmark's prompts share no prefix);
 * after its prefill a request's first token reaches the client {@code overheadMs} later (KV
 * handoff, first decode step, HTTP), and each further token takes {@code decodeStepMs}. Decode
 * capacity is not modelled: in the benchmark it is not the bottleneck.
 *
 * @param overheadSource where {@code overheadMs} came from, for the report
 */
public record OfflineModel(double prefillTokensPerSecond, double overheadMs, String overheadSource,
                           double decodeStepMs) {

    public OfflineModel {
        if (!(prefillTokensPerSecond > 0) || Double.isInfinite(prefillTokensPerSecond)) {
            throw new IllegalArgumentException("prefillTokensPerSecond: " + prefillTokensPerSecond + " (expected: > 0)");
        }
        if (!(overheadMs >= 0) || Double.isInfinite(overheadMs)) {
            throw new IllegalArgumentException("overheadMs: " + overheadMs + " (expected: >= 0)");
        }
        if (!(decodeStepMs >= 0) || Double.isInfinite(decodeStepMs)) {
            throw new IllegalArgumentException("decodeStepMs: " + decodeStepMs + " (expected: >= 0)");
        }
    }

    public double prefillMs(long promptTokens) {
        return promptTokens * 1000.0 / prefillTokensPerSecond;
    }
}
