package dev.sluice.gateway.server;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.config.ClientLimits;
import dev.sluice.gateway.logging.LogThrottle;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.tracing.Tracing;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.util.concurrent.ScheduledFuture;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every client connection's budget: the cap on open connections (past it: one preformatted 503 and
 * close, before any handler is built), and each connection's deadlines (its request guard's: header,
 * body, idle), enforced by one sweep per event loop instead of a timer per request. A guard changing
 * phase writes two fields; the sweep, every quarter of the shortest timeout (10 ms to 1 s), closes
 * what is past its deadline. At 10,000 connections on a loop that is 10,000 comparisons a tick,
 * against a schedule and a cancel on the loop's timer queue per request phase otherwise.
 */
final class ClientConnections {
    private static final Logger log = LoggerFactory.getLogger(ClientConnections.class);
    private static final LogThrottle REFUSED_LINES = new LogThrottle(10);

    private final ClientLimits limits;
    private final GatewayMetrics metrics;
    private final AtomicInteger open = new AtomicInteger();
    private final Map<EventLoop, Sweep> sweeps = new ConcurrentHashMap<>();
    private final long sweepNanos;
    private final byte[] refusal;

    ClientConnections(ClientLimits limits, GatewayMetrics metrics) {
        this.limits = limits;
        this.metrics = metrics;
        long shortest = Math.min(limits.headerTimeout().toNanos(), Math.min(limits.bodyTimeout().toNanos(),
                limits.idleTimeout().toNanos()));
        this.sweepNanos = Math.max(TimeUnit.MILLISECONDS.toNanos(10), Math.min(TimeUnit.SECONDS.toNanos(1), shortest / 4));
        ApiError e = ApiError.httpRefused(HttpResponseStatus.SERVICE_UNAVAILABLE, "too_many_connections",
                "the gateway has " + limits.maxConnections() + " client connections open (http.max_connections); "
                        + "retry shortly");
        String body = e.toJson().toString();
        this.refusal = ("HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
                + "connection: close\r\ncontent-length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body)
                .getBytes(StandardCharsets.UTF_8);
    }

    ClientLimits limits() {
        return limits;
    }

    int open() {
        return open.get();
    }

    /**
     * Counts a new connection in, or refuses it past the cap: the 503 is written as bytes, so a flood
     * costs no pipeline, no decoder, no buffers beyond one small write.
     */
    boolean admit(Channel ch, Tracing tracing) {
        if (open.incrementAndGet() > limits.maxConnections()) {
            open.decrementAndGet();
            metrics.httpRefused("too_many_connections");
            if (REFUSED_LINES.tryAcquire(System.nanoTime()) >= 0) {
                log.warn("client connection refused remote={} reason=too_many_connections open={} limit={}",
                        ch.remoteAddress(), open.get(), limits.maxConnections());
            }
            // no byte of the request is read, so no client trace to continue: a trace of its own
            tracing.refused(null, null, null, 503, "too_many_connections", "the gateway has "
                    + limits.maxConnections() + " client connections open (http.max_connections)");
            ByteBuf bytes = Unpooled.wrappedBuffer(refusal);
            ch.writeAndFlush(bytes).addListener(ChannelFutureListener.CLOSE);
            return false;
        }
        ch.closeFuture().addListener(f -> open.decrementAndGet());
        return true;
    }

    /** A connection whose deadline the sweep watches (the request guard, changing phase as it reads). */
    interface Deadline {
        boolean expiredAt(long nowNanos);

        /** Past its deadline: close it (with the answer its phase calls for). */
        void expire();
    }

    void track(Deadline guard, EventLoop loop) {
        sweeps.computeIfAbsent(loop, Sweep::new).guards.add(guard);
    }

    void untrack(Deadline guard, EventLoop loop) {
        Sweep s = sweeps.get(loop);
        if (s != null) {
            s.guards.remove(guard);
        }
    }

    void close() {
        sweeps.values().forEach(s -> s.task.cancel(false));
    }

    /** One loop's guards; touched only from that loop. */
    private final class Sweep {
        final Set<Deadline> guards = new HashSet<>();
        final ScheduledFuture<?> task;
        private final List<Deadline> expired = new ArrayList<>();

        Sweep(EventLoop loop) {
            task = loop.scheduleAtFixedRate(this::run, sweepNanos, sweepNanos, TimeUnit.NANOSECONDS);
        }

        private void run() {
            long now = System.nanoTime();
            for (Deadline g : guards) {
                if (g.expiredAt(now)) {
                    expired.add(g);
                }
            }
            for (Deadline g : expired) {
                g.expire();
            }
            expired.clear();
        }
    }
}
