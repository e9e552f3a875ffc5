package dev.sluice.gateway.cacheview;

import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Whether the KV-event subscriber's ZMQ context still moves data: a PUSH socket connected over
 * loopback TCP to a PULL socket bound in the same context, a probe message every {@link
 * #EVERY_NANOS}, and the context called stuck when one has not arrived within {@link
 * #DEADLINE_NANOS} (and half a second more of waiting for it, so that a pause of this thread is not
 * taken for the context's). Every stream of a context goes through its one I/O thread; when that
 * thread dies (JeroMQ 0.6.0's poller survives a RuntimeException from a socket's handler, not an Error
 * such as an OutOfMemoryError nor an exception from a timer; older JeroMQ lost threads to exceptions,
 * https://github.com/zeromq/jeromq/issues/328) or hangs (https://github.com/zeromq/jeromq/issues/765),
 * every stream goes silent at once and nothing reports it: no monitor event, no disconnect. Silence itself cannot tell: a worker with no
 * traffic publishes nothing, and JeroMQ 0.6.0 has no connect timeout, so a publisher behind a
 * firewall that drops packets shows no event for minutes. The probe depends on no remote endpoint.
 * Touched by the subscriber's thread only.
 */
final class ContextProbe {
    private static final Logger log = LoggerFactory.getLogger(KvEventSubscriber.class);
    static final long EVERY_NANOS = 1_000_000_000L;
    static final long DEADLINE_NANOS = 10_000_000_000L;
    /** Contexts replaced at most, a subscriber's life long: each one left behind may keep threads and sockets. */
    static final int MAX_REPLACEMENTS = 8;

    private final ZMQ.Socket in;
    private final ZMQ.Socket out;
    private long sentNanos; // the probe in flight: when it was sent; 0: none
    private long nextNanos;

    private ContextProbe(ZMQ.Socket in, ZMQ.Socket out, long now) {
        this.in = in;
        this.out = out;
        this.nextNanos = now;
    }

    /** A probe of {@code ctx}, or none when it cannot be made (logged: the context then goes unwatched). */
    static ContextProbe openOrNone(ZContext ctx) {
        try {
            return open(ctx, System.nanoTime());
        } catch (RuntimeException e) {
            log.warn("kv events: no liveness probe of the ZMQ context error={}", e.toString());
            return null;
        }
    }

    /**
     * {@code stuck}'s I/O thread moves nothing: every stream is let go, due to be opened again at once, on
     * the new context returned. The old one is closed on a thread of its own, since closing a context whose
     * I/O thread is gone can wait forever; its sockets are never touched again by the subscriber.
     */
    static ZContext replace(ZContext stuck, List<EventStream> streams) {
        log.error("kv events: the ZMQ context moves no data (its liveness probe is over {} ms late): every stream "
                + "is opened again on a new context streams={}", DEADLINE_NANOS / 1_000_000, streams.size());
        long now = System.nanoTime();
        for (EventStream s : streams) {
            if (s.abandon(now)) {
                s.blocks.resubscribes.incrementAndGet();
            }
        }
        // with its I/O thread gone the close never ends (the context waits for its sockets): what the old
        // context holds (its threads, selectors, connections to the publishers) stays until the process ends
        Thread closer = new Thread(stuck::close, "sluice-kv-context-close");
        closer.setDaemon(true);
        closer.start();
        return new ZContext(1);
    }

    /** A probe in {@code ctx}, or an exception when loopback cannot be bound (then there is none). */
    static ContextProbe open(ZContext ctx, long now) {
        ZMQ.Socket in = ctx.createSocket(SocketType.PULL);
        ZMQ.Socket out = null;
        try {
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
            return new ContextProbe(in, out, now);
        } catch (RuntimeException e) {
            if (out != null) {
                ctx.destroySocket(out);
            }
            ctx.destroySocket(in);
            throw e;
        }
    }

    /**
     * Takes the probes that arrived and sends the next one when due; whether the one in flight is
     * overdue (the context is stuck).
     */
    boolean stuck(long now) {
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
        if (now - nextNanos >= 0 && out.send(new byte[] {1}, ZMQ.DONTWAIT)) {
            sentNanos = now == 0 ? 1 : now;
            nextNanos = now + EVERY_NANOS;
        }
        return false;
    }
}
