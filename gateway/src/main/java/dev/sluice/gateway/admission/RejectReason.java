package dev.sluice.gateway.admission;

import io.netty.handler.codec.http.HttpResponseStatus;

/**
 * Why admission said no. Each has its own status and {@code code} so a client can tell "come
 * back in a few seconds" (429) from "this gateway cannot serve you now" (503) from "never"
 * (413); the code is also the {@code reason} label of {@code sluice_rejections_total}.
 */
public enum RejectReason {
    /** The queue holds max_queued_requests and nothing of lower priority can make room. */
    QUEUE_FULL(HttpResponseStatus.TOO_MANY_REQUESTS, "queue_full"),
    /** Queued plus in-prefill prompt tokens would exceed max_pending_tokens. */
    TOKEN_BUDGET_EXCEEDED(HttpResponseStatus.TOO_MANY_REQUESTS, "token_budget_exceeded"),
    /** Waited in the queue past queue_timeout or the client's own deadline. */
    QUEUE_TIMEOUT(HttpResponseStatus.TOO_MANY_REQUESTS, "queue_timeout"),
    /** The predicted wait (tokens ahead / measured prefill throughput) is already past the deadline. */
    DEADLINE_UNREACHABLE(HttpResponseStatus.TOO_MANY_REQUESTS, "deadline_unreachable"),
    /**
     * A queued request that gave way to shorter ones of its class, so that more requests make their
     * deadlines than could with it (admission.scheduling.shed: longest).
     */
    SHED(HttpResponseStatus.TOO_MANY_REQUESTS, "shed"),
    /** A queued request pushed out by a higher-priority arrival while the queue was full. */
    EVICTED(HttpResponseStatus.TOO_MANY_REQUESTS, "evicted"),
    /** A queued request of a tenant over its share, pushed out for a tenant under its share (queue or budget full). */
    TENANT_SHARE(HttpResponseStatus.TOO_MANY_REQUESTS, "tenant_share"),
    /** The tenant's token bucket (tenant_limits.tokens_per_minute) is in debt: retry when it refills. */
    TENANT_RATE_LIMITED(HttpResponseStatus.TOO_MANY_REQUESTS, "tenant_rate_limited"),
    /** The prompt alone exceeds max_request_tokens: it can never run, retrying will not help. */
    REQUEST_TOO_LARGE(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "request_too_large"),
    /** No usable prefill or decode worker. */
    NO_CAPACITY(HttpResponseStatus.SERVICE_UNAVAILABLE, "no_capacity"),
    /**
     * The only worker of a role is suspect of a silent stall (health.stall_panic): refused at once,
     * Retry-After until the gateway's next probe of the pair, instead of waiting out the stall.
     */
    WORKER_SUSPECT(HttpResponseStatus.SERVICE_UNAVAILABLE, "worker_suspect"),
    /** The gateway is shutting down and admits nothing new. */
    DRAINING(HttpResponseStatus.SERVICE_UNAVAILABLE, "draining");

    private final HttpResponseStatus status;
    private final String code;

    RejectReason(HttpResponseStatus status, String code) {
        this.status = status;
        this.code = code;
    }

    public HttpResponseStatus status() {
        return status;
    }

    public String code() {
        return code;
    }
}
