package dev.sluice.gateway.cacheview;

import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * The KV-event subscriber's ZMQ context, and whether it still moves data: a PUSH socket connected
 * over loopback TCP to a PULL socket bound in the same context, a probe message every {@link
 * #EVERY_NANOS}, and the context called stuck when one has not arrived within {@link
 * #DEADLINE_NANOS} (and half a second more of waiting for it, so that a pause of the subscriber's
 * thread is not taken for the context's). Every stream of a context goes through its one I/O thread;
 * when that thread dies (JeroMQ 0.6.0's poller survives a RuntimeException from a socket's handler,
 * not an Error such as an OutOfMemoryError nor an exception from a timer; older JeroMQ lost threads to
 * exceptions, https://github.com/zeromq/jeromq/issues/328) or hangs
 * (https://github.com/zeromq/jeromq/issues/765), every stream goes silent at once and nothing reports
 * it: no monitor event, no disconnect. Silence itself cannot tell: a worker with no traffic publishes
 * nothing, and JeroMQ 0.6.0 has no connect timeout, so a publisher behind a firewall that drops
 * packets shows no event for minutes. The probe depends on no remote endpoint. A stuck context is
 * replaced by a new one ({@link #renewIfStuck}), {@link #MAX_REPLACEMENTS} times at most. Touched by
 * the subscriber's thread only.
 */
final class WatchedContext implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(KvEventSubscriber.class);
    static final long EVERY_NANOS = 1_000_000_000L;
    static final long DEADLINE_NANOS = 10_000_000_000L;
    /** Contexts replaced at most, a subscriber's life long: each one left behind keeps threads and sockets. */
    static final int MAX_REPLACEMENTS = 8;
    private static final byte[] PROBE = {1};

    private ZContext ctx = new ZContext(1);
    private ZMQ.Socket in; // null (with out): the context goes unwatched
    private ZMQ.Socket out;
    private long sentNanos; // the probe in flight: when it was sent; 0: none
    private long nextNanos;
    private int replacements;

    WatchedContext() {
        watch();
    }

    /** The context in force: the one to open sockets in. */
    ZContext context() {
        return ctx;
    }

    /**
     * When the context moves no data: every stream is let go, due to be opened again at once, in a new
     * context; whether that happened. The old context is left to close on a thread of its own: with its
     * I/O thread gone the close never ends (it waits for its sockets), so what it holds (its threads,
     * selectors, connections to the publishers) stays until the process ends.
     */
    boolean renewIfStuck(List<EventStream> streams) {
        if (!stuck(System.nanoTime())) {
            return false;
        }
        log.error("kv events: the ZMQ context moves no data (its liveness probe is over {} ms late): every stream "
                + "is opened again on a new context streams={}", DEADLINE_NANOS / 1_000_000, streams.size());
        long now = System.nanoTime();
        for (EventStream s : streams) {
            if (s.abandon(now)) {
                s.blocks.resubscribes.incrementAndGet();
            }
        }
        Thread closer = new Thread(ctx::close, "sluice-kv-context-close");
        closer.setDaemon(true);
        closer.start();
        ctx = new ZContext(1);
        in = null;
        out = null;
        if (++replacements < MAX_REPLACEMENTS) {
            watch();
        }
        return true;
    }

    // the probe's sockets in the context in force; without them (logged) the context goes unwatched
    private void watch() {
        try {
            in = ctx.createSocket(SocketType.PULL);
            in.setLinger(0);
            in.setReceiveTimeOut(500);
            // a fresh loopback connection in JeroMQ 0.6.0 sometimes never starts its handshake until the
            // handshake interval (30 s by default) drops it: the streams' 2 s, or the probe would misfire
            in.setHandshakeIvl(EventStream.HANDSHAKE_MS);
            in.bind("tcp://127.0.0.1:*");
            out = ctx.createSocket(SocketType.PUSH);
            out.setLinger(0);
            out.setHandshakeIvl(EventStream.HANDSHAKE_MS);
            out.setSndHWM(4);
            out.connect(in.getLastEndpoint());
            sentNanos = 0;
            nextNanos = System.nanoTime();
        } catch (RuntimeException e) {
            unwatch("no liveness probe of the ZMQ context", e);
        }
    }

    // its sockets are left to the context's close
    private void unwatch(String why, RuntimeException e) {
        log.warn("kv events: {} error={}", why, e.toString());
        in = null;
        out = null;
    }

    // takes the probes that arrived and sends the next one when due; whether the one in flight is overdue
    private boolean stuck(long now) {
        if (in == null) {
            return false;
        }
        try {
            while (in.recv(ZMQ.DONTWAIT) != null) {
                sentNanos = 0;
            }
            if (sentNanos != 0) {
                if (now - sentNanos <= DEADLINE_NANOS) {
                    return false;
                }
                if (in.recv(0) != null) { // late, as a long pause of this thread would make it: once more, waiting
                    sentNanos = 0;
                    return false;
                }
                return true;
            }
            if (now - nextNanos >= 0 && out.send(PROBE, ZMQ.DONTWAIT)) {
                sentNanos = now == 0 ? 1 : now;
                nextNanos = now + EVERY_NANOS;
            }
            return false;
        } catch (RuntimeException e) { // the probe's failure is not the streams': it alone is dropped
            unwatch("the ZMQ context's liveness probe failed and is dropped", e);
            return false;
        }
    }

    @Override
    public void close() {
        ctx.close();
    }
}
