package dev.sluice.gateway.pd;

/**
 * What an attempt tells the request it belongs to: the one contract between the protocol
 * drivers and the exchange. The attempt reports what happened on its workers; the exchange alone
 * decides what it means (deadlines, retries, the admission budget, and every health outcome, which
 * is reported from the exchange and nowhere else). Each call names the attempt by its
 * {@link AttemptKey}, because a stale attempt (given up for a retry) may still report: its news
 * counts for its workers' health only. Called on the request's event loop.
 */
interface AttemptEvents {
    /** The prefill half answered well: its worker did its part and the prompt stops counting as pending. */
    void prefillSucceeded(AttemptKey a);

    /** The first token reached the gateway (the decode's first chunk). */
    void firstToken(AttemptKey a);

    /** A chunk went to the client (the idle clock, inter-token gaps, backpressure). */
    void relayed(AttemptKey a);

    /** The client's response is complete; {@code clean}: no failure was seen in it, so the decode did its part. */
    void responseEnded(AttemptKey a, boolean clean);

    /** The attempt failed: the exchange counts it, then retries on another pair or answers the client. */
    void failed(AttemptKey a, AttemptFailure f);

    /** A worker failed after its answer reached the client: counted against it, the response goes on. */
    void failedAfterCommit(AttemptKey a, AttemptFailure f);

    /** A part of the attempt stopped running on its worker (the request may be able to end now). */
    void partEnded(AttemptKey a);

    /**
     * The gateway's own code threw while handling this attempt's answer: a bug, never the worker's
     * fault. The exchange answers 500, counts it and logs it once with its stack trace.
     */
    void internalError(AttemptKey a, Throwable error);

    /** Whether a worker's prompt-token count is still wanted (the estimator learns from the first one). */
    boolean wantsPromptTokens();

    /** A worker said how many prompt tokens the request had. */
    void promptTokens(long tokens);

    /** A worker's completion-token count so far (cumulative: the largest is kept). */
    void completionTokens(long tokens);

    /** The finish reasons of the answer the client got, one per sequence (empty: none named); for the trace. */
    default void finishReasons(java.util.List<String> reasons) {
    }

    /** Whether this attempt has produced its first token. */
    boolean pastFirstToken(AttemptKey a);
}
