package dev.sluice.testbed.load;

/**
 * What one client saw. Times are nanoseconds from its send; -1 when it did not happen.
 *
 * @param status         HTTP status of the answer, 0 when none came
 * @param errorCode      {@code error.code} of a rejection body (e.g. {@code token_budget_exceeded}), or null
 * @param retryAfter     the {@code Retry-After} header of a rejection, or null
 * @param failureKind    for FAILED: {@code http_<status>}, {@code stream_error}, {@code connection},
 *                       {@code incomplete}; for GAVE_UP: {@code before_first_token} or {@code mid_stream}
 * @param itlNanos       gaps between consecutive content chunks
 * @param outputTokens   {@code usage.completion_tokens} when reported, else the content chunks seen
 * @param plan           what was sent (prompt size, class, patience, TTFT objective); null in unit tests
 * @param sentAtNanos    the send, on the {@link System#nanoTime()} clock
 */
record RequestResult(int index, Outcome outcome, int status, String errorCode, String retryAfter,
                     String failureKind, String message, long ttftNanos, long e2eNanos, long[] itlNanos,
                     int outputTokens, PlannedRequest plan, long sentAtNanos) {

    /** A result with no plan (unit tests of the statistics). */
    RequestResult(int index, Outcome outcome, int status, String errorCode, String retryAfter, String failureKind,
                  String message, long ttftNanos, long e2eNanos, long[] itlNanos, int outputTokens) {
        this(index, outcome, status, errorCode, retryAfter, failureKind, message, ttftNanos, e2eNanos, itlNanos,
                outputTokens, null, 0);
    }

    /** The request's own TTFT objective (its class's), else {@code fallback}; null: none. */
    java.time.Duration sloTtft(java.time.Duration fallback) {
        if (plan == null) {
            return fallback;
        }
        return plan.sloTtftNanos() < 0 ? null : java.time.Duration.ofNanos(plan.sloTtftNanos());
    }

    String className() {
        return plan == null ? null : plan.className();
    }

    enum Outcome { COMPLETED, GAVE_UP, FAILED, REJECTED }

    /** A 429, 503 or 413 is the server saying no (not a failure): the client is told at once. */
    static boolean isRejection(int status) {
        return status == 429 || status == 503 || status == 413;
    }

    /** (E2E - TTFT) / (output tokens - 1), or -1 when undefined (one token or less). */
    long tpotNanos() {
        return outputTokens > 1 && ttftNanos >= 0 ? (e2eNanos - ttftNanos) / (outputTokens - 1) : -1;
    }
}
