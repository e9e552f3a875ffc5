package dev.sluice.gateway.pd;

import dev.sluice.gateway.admission.QueueWatch;

/**
 * One request's time in the admission queue, and what its client is told of it. Every response
 * says the wait in {@code X-Sluice-Queue-Wait-Ms} (summed over the waits of a retried request); a
 * streamed request that asked for queue updates gets its 200 and headers at admission, a comment
 * {@code : queue position=N eta_ms=M} each time admission reports where it stands (at once, then
 * about every second), and {@code : queue position=0 eta_ms=0} and {@code : queue wait_ms=N} when
 * it is dispatched. Comments are no first byte: the stream is committed only by its first token.
 * Lives on the request's event loop.
 */
final class QueueUpdates implements QueueWatch {
    private final ClientSink client;
    private final boolean wanted;
    private boolean waiting;
    private long waitStart;
    private long waitedNanos;

    /** @param wanted the client asked for updates (header or class) and its request is streamed */
    QueueUpdates(ClientSink client, boolean wanted) {
        this.client = client;
        this.wanted = wanted;
    }

    /** Whether the client gets comments: the ticket is to be watched. */
    boolean wanted() {
        return wanted;
    }

    /** The request goes to admission (first time, or again after a failed attempt). */
    void submitted(long now) {
        waiting = true;
        waitStart = now;
    }

    /** Admission took it (queued or granted, not refused at once): an opted-in stream opens now. */
    void admitted() {
        if (wanted) {
            client.openStream();
        }
    }

    @Override
    public void queued(int ahead, long etaMillis) {
        if (waiting && wanted) {
            client.comment("queue position=" + ahead + " eta_ms=" + etaMillis);
        }
    }

    /** Its wait is over: dispatched to a pair. */
    void granted(long now) {
        if (stopWaiting(now) && wanted) {
            client.comment("queue position=0 eta_ms=0");
            client.comment("queue wait_ms=" + waitedNanos / 1_000_000);
        }
    }

    /** Its wait is over otherwise: refused, or the request ended while it waited. */
    void ended(long now) {
        stopWaiting(now);
    }

    private boolean stopWaiting(long now) {
        if (!waiting) {
            return false;
        }
        waiting = false;
        waitedNanos += Math.max(0, now - waitStart);
        client.queueWait(waitedNanos / 1_000_000);
        return true;
    }
}
