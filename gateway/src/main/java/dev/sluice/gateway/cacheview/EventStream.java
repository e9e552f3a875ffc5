package dev.sluice.gateway.cacheview;

import dev.sluice.gateway.routing.Worker;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * One DP rank's KV event stream of one worker: its SUB socket and the monitor that says whether it
 * is connected, its state, the last sequence number it delivered and when it was last heard.
 * Touched by the subscriber's thread only.
 *
 * <p>Each stream lives on its own (issue 29): an endpoint that does not resolve or refuses is this
 * stream's state, retried with its own backoff, never the subscriber's failure.
 */
final class EventStream {
    /**
     * A ZMTP handshake not done in this time is abandoned, and ZMQ connects again by itself.
     * JeroMQ 0.6.0 sometimes never reads the publisher's greeting on a freshly established
     * connection (measured: 9 in 140 fresh SUB connections on loopback, the 10-byte greeting left
     * in the receive queue, both I/O threads idle); its default handshake interval, 30 s, then left
     * the stream silent for 30 s. With 2 s: 0 in 80, three handshakes abandoned and redone
     * (docs/cache-affinity.md, "A subscription that never comes up").
     */
    static final int HANDSHAKE_MS = 2_000;
    /** ZMQ's own reconnect interval after a refused or lost connection, doubled up to the cap. */
    static final int RECONNECT_MS = 100;
    static final int RECONNECT_MAX_MS = 10_000;
    private static final AtomicInteger MONITORS = new AtomicInteger();

    /** Where a stream is. */
    enum State {
        /** Not opened yet, or its open failed (the endpoint does not resolve): opened again after its backoff. */
        CLOSED,
        /** Opened; ZMQ connects (and reconnects) by itself until the handshake is done. */
        CONNECTING,
        /** Connected to the publisher: the ZMTP handshake done, not disconnected since. */
        UP
    }

    final Worker worker;
    final int rank;
    final String endpoint;
    final WorkerBlocks blocks;
    private ZMQ.Socket socket;
    private ZMQ.Socket monitor;
    private State state = State.CLOSED;
    final Backoff backoff = new Backoff(RECONNECT_MS * 1_000_000L, RECONNECT_MAX_MS * 1_000_000L);
    /** When a closed stream may be opened again. */
    long retryAtNanos;
    /** The last open failure, logged once until it changes. */
    String lastFailure;
    /** When a stream disconnected and not back is opened again by the subscriber; 0: not due. */
    long reopenAtNanos;
    /** The last sequence number applied; -1: none since the socket was opened. */
    long lastSeq = -1;
    /** Nanos of the last message (0: none yet), and of the socket's opening. */
    long lastHeardNanos;
    long openedNanos;
    /** Malformed frames since the last one logged (a hostile publisher is logged once in a while, not per frame). */
    long unloggedMalformed;
    long malformedLoggedNanos;
    /** The pending lookup of the endpoint's host before an open; null: none. */
    java.util.concurrent.CompletableFuture<Void> resolving;

    EventStream(Worker worker, int rank, String endpoint, WorkerBlocks blocks) {
        this.worker = Objects.requireNonNull(worker, "worker");
        this.rank = rank;
        this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
        this.blocks = Objects.requireNonNull(blocks, "blocks");
        this.retryAtNanos = System.nanoTime(); // due now (nanoTime may be negative: never 0 for "now")
    }

    /**
     * A fresh SUB socket, subscribed and connected (ZMQ reconnects it by itself while the worker is
     * away, with its own backoff), and a monitor of it. The sequence is kept: a stream opened again
     * continues it, and the batches published while it was closed show as a gap.
     *
     * @throws RuntimeException when the endpoint cannot be connected to (it does not resolve, ...);
     *                          nothing is left open then
     */
    void open(ZContext ctx, byte[] topic, long maxMessageSize, long nowNanos) {
        ZMQ.Socket sub = ctx.createSocket(SocketType.SUB);
        ZMQ.Socket mon = null;
        try {
            sub.setLinger(0);
            sub.setRcvHWM(100_000);
            sub.setHandshakeIvl(HANDSHAKE_MS);
            sub.setReconnectIVL(RECONNECT_MS);
            sub.setReconnectIVLMax(RECONNECT_MAX_MS);
            // a frame above it is dropped by ZMQ with its connection, before it is read into the heap
            sub.setMaxMsgSize(maxMessageSize);
            String monitorAt = "inproc://sluice-kv-monitor-" + MONITORS.incrementAndGet();
            sub.monitor(monitorAt, ZMQ.EVENT_HANDSHAKE_PROTOCOL | ZMQ.EVENT_DISCONNECTED);
            mon = ctx.createSocket(SocketType.PAIR);
            mon.setLinger(0);
            mon.connect(monitorAt);
            sub.subscribe(topic);
            sub.connect(endpoint);
        } catch (RuntimeException e) {
            if (mon != null) {
                ctx.destroySocket(mon);
            }
            ctx.destroySocket(sub);
            throw e;
        }
        socket = sub;
        monitor = mon;
        state = State.CONNECTING;
        openedNanos = nowNanos;
    }

    ZMQ.Socket socket() {
        return socket;
    }

    ZMQ.Socket monitor() {
        return monitor;
    }

    State state() {
        return state;
    }

    /** Moves to {@code next}; whether that is a change (to be logged), and the up gauge follows. */
    boolean moveTo(State next) {
        if (next == state) {
            return false;
        }
        state = next;
        blocks.up(rank, next == State.UP);
        if (next == State.UP) {
            reopenAtNanos = 0;
            backoff.reset();
            lastFailure = null;
        }
        return true;
    }

    void close(ZContext ctx) {
        if (monitor != null) {
            ctx.destroySocket(monitor);
            monitor = null;
        }
        if (socket != null) {
            ctx.destroySocket(socket);
            socket = null;
        }
        moveTo(State.CLOSED);
        reopenAtNanos = 0;
    }

    /**
     * Lets go of this stream's sockets without closing them (their context is stuck and is closed as a
     * whole elsewhere) and makes it due to be opened again now; whether it had sockets.
     */
    boolean abandon(long nowNanos) {
        boolean open = socket != null;
        socket = null;
        monitor = null;
        moveTo(State.CLOSED);
        reopenAtNanos = 0;
        retryAtNanos = nowNanos;
        return open;
    }

    /**
     * Whether this stream should be opened again: its worker was sent work that should store
     * blocks more than {@code afterNanos} ago and this stream has said nothing since, nor since it
     * was (re)opened {@code afterNanos} ago.
     */
    boolean silent(long nowNanos, long afterNanos) {
        long awaited = blocks.awaitingSince();
        return socket != null && awaited != 0 && nowNanos - awaited > afterNanos
                && (lastHeardNanos == 0 || lastHeardNanos - awaited < 0) && nowNanos - openedNanos > afterNanos;
    }

    @Override
    public String toString() {
        return worker.url() + "#" + rank;
    }
}
