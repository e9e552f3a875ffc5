package dev.sluice.gateway.pd;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Why the gateway stopped a request's halves: the bounded {@code cause} label of
 * {@code sluice_aborts_total}, and what decides how they are stopped (a client that left gets an
 * abort on both workers even for a half that already answered). The one list of causes.
 */
public enum AbortCause {
    /** The client closed its connection. */
    CLIENT_DISCONNECT,
    /** A client deadline passed ({@code timeouts.request}, {@code timeouts.first_token}). */
    TIMEOUT,
    /** The stall watchdog caught a worker making no progress. */
    STALL,
    /** Health took a worker the attempt waited on out of rotation. */
    WORKER_EJECTED,
    /** The other half failed: this one is stopped with it. */
    PEER_FAILED,
    /** A higher-priority request took its place in the queue. */
    EVICTED,
    /** vLLM: the request ended between the legs and its prefill's KV blocks could not be released. */
    STRANDED_PREFILL,
    /** The operator deleted a worker the request ran on ({@code DELETE /admin/workers/{id}}). */
    WORKER_REMOVED,
    /** The drain grace period ended with the request still running. */
    DRAIN,
    /** The client read nothing of a started stream for {@code timeouts.idle_stream}. */
    SLOW_CLIENT,
    /** The gateway itself failed while handling the request (a bug): never the worker's fault. */
    INTERNAL_ERROR,
    /**
     * The gateway's own probe of a pair suspect of a stall had no answer within
     * {@code health.stall_panic.probe_timeout} (no client request is involved).
     */
    STALL_PROBE,
    /**
     * The gateway's own calibration of a prefill worker's rate ({@code admission.prefill_rate.calibration})
     * got no answer within its {@code timeout}, or the gateway closed meanwhile (no client request is involved).
     */
    CALIBRATION;

    private final String label = name().toLowerCase(Locale.ROOT);

    public String label() {
        return label;
    }

    /** Every label, for exporting the counters at 0 from start-up. */
    public static List<String> labels() {
        return Arrays.stream(values()).map(AbortCause::label).toList();
    }
}
