package dev.sluice.gateway.cacheview;

import dev.sluice.gateway.routing.Worker;
import java.util.Objects;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * One DP rank's KV event stream of one worker: its SUB socket, the last sequence number it
 * delivered and when it was last heard. Touched by the subscriber's thread only.
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

    final Worker worker;
    final int rank;
    final String endpoint;
    final WorkerBlocks blocks;
    private ZMQ.Socket socket;
    /** The last sequence number applied; -1: none since the socket was opened. */
    long lastSeq = -1;
    /** Nanos of the last message (0: none yet), and of the socket's opening. */
    long lastHeardNanos;
    long openedNanos;

    EventStream(Worker worker, int rank, String endpoint, WorkerBlocks blocks) {
        this.worker = Objects.requireNonNull(worker, "worker");
        this.rank = rank;
        this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
        this.blocks = Objects.requireNonNull(blocks, "blocks");
    }

    /**
     * A fresh SUB socket, subscribed and connected (ZMQ reconnects it by itself while the worker is
     * away). The sequence is kept: a stream opened again continues it, and the batches published
     * while it was closed show as a gap.
     */
    ZMQ.Socket open(ZContext ctx, byte[] topic, long nowNanos) {
        ZMQ.Socket sub = ctx.createSocket(SocketType.SUB);
        sub.setLinger(0);
        sub.setRcvHWM(100_000);
        sub.setHandshakeIvl(HANDSHAKE_MS);
        sub.subscribe(topic);
        sub.connect(endpoint);
        socket = sub;
        openedNanos = nowNanos;
        return sub;
    }

    ZMQ.Socket socket() {
        return socket;
    }

    void close(ZContext ctx) {
        if (socket != null) {
            ctx.destroySocket(socket);
            socket = null;
        }
    }

    /**
     * Whether this stream should be opened again: its worker was sent work that should store
     * blocks more than {@code afterNanos} ago and this stream has said nothing since, nor since it
     * was (re)opened {@code afterNanos} ago.
     */
    boolean silent(long nowNanos, long afterNanos) {
        long awaited = blocks.awaitingSince();
        return awaited != 0 && nowNanos - awaited > afterNanos && (lastHeardNanos == 0 || lastHeardNanos - awaited < 0)
                && nowNanos - openedNanos > afterNanos;
    }

    @Override
    public String toString() {
        return worker.url() + "#" + rank;
    }
}
