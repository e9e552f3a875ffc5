package dev.sluice.gateway.routing;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One prefill or decode server as the gateway sees it: its address, whether it is usable right
 * now (health probes and passive failures decide), and how many requests it holds.
 */
public final class Worker {
    private final WorkerRole role;
    private final WorkerEndpoint endpoint;
    private final String name;
    private final AtomicInteger inflight = new AtomicInteger();
    private volatile boolean usable;
    private volatile WorkerTelemetry telemetry = WorkerTelemetry.NONE;

    public Worker(WorkerRole role, WorkerEndpoint endpoint) {
        this.role = Objects.requireNonNull(role, "role");
        this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
        this.name = endpoint.host() + ":" + endpoint.port();
    }

    public WorkerRole role() {
        return role;
    }

    public String url() {
        return endpoint.url();
    }

    public String host() {
        return endpoint.host();
    }

    public int port() {
        return endpoint.port();
    }

    /** The prefill's KV bootstrap port, or null for "the server's default". */
    public Integer bootstrapPort() {
        return endpoint.bootstrapPort();
    }

    /** host:port, the bounded {@code worker} label of metrics and logs. */
    public String name() {
        return name;
    }

    public boolean isUsable() {
        return usable;
    }

    public void markUsable(boolean usable) {
        this.usable = usable;
    }

    public WorkerTelemetry telemetry() {
        return telemetry;
    }

    public void telemetry(WorkerTelemetry t) {
        this.telemetry = t;
    }

    public int inflight() {
        return inflight.get();
    }

    public void acquired() {
        inflight.incrementAndGet();
    }

    public void released() {
        inflight.decrementAndGet();
    }

    @Override
    public String toString() {
        return role.label() + "(" + name + ")";
    }
}
