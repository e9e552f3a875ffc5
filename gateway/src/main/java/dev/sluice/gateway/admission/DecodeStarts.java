package dev.sluice.gateway.admission;

import dev.sluice.gateway.routing.Worker;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The streams each decode (each rank of one routed per rank) holds that have not had their first
 * token, and when a stream there last ended: what tells a stream that waits in the decode for a slot
 * from one the decode stalled on. A decode runs a known number of streams at once (SGLang's running
 * cap a rank); the gateway may hold more (the decode lookahead, docs/admission.md), and which of them
 * waits is the decode's choice, by the order their KV lands, not the order of dispatch. A stream past
 * its prefill with no first token waits for a slot while the streams that did start fill the cap, or
 * when a slot was freed so lately that the decode may not have run it yet (a step or two); otherwise
 * the silence is a stall. Counted only for streams on a decode of known cap (a direct decode's too;
 * not a unified worker's, whose first token is its prefill's end). A worker routed whole counts in
 * slot 0 and is read over all its slots. Guarded by the admission lock.
 */
final class DecodeStarts {
    /** One decode's slots (its ranks, or 0 for the worker whole). */
    private static final class Slots {
        int[] awaiting = new int[1];
        long[] endedAt = new long[1]; // 0: no stream ended there yet

        void fit(int slot) {
            if (slot >= awaiting.length) {
                awaiting = Arrays.copyOf(awaiting, slot + 1);
                endedAt = Arrays.copyOf(endedAt, slot + 1);
            }
        }
    }

    private final Map<Worker, Slots> byDecode = new HashMap<>();

    /** {@code t} was dispatched: a stream on a decode of known running cap awaits its first token. */
    void dispatched(Ticket t) {
        if (!t.stream || (t.decode == t.prefill && !t.direct) || t.decode.identity().runningPerRank() <= 0) {
            return;
        }
        int slot = slotOf(t);
        Slots s = byDecode.computeIfAbsent(t.decode, w -> new Slots());
        s.fit(slot);
        s.awaiting[slot]++;
        t.decodeStartSlot = slot;
    }

    /** {@code t}'s stream had its first token: it no longer awaits one. */
    void started(Ticket t) {
        int slot = t.decodeStartSlot;
        if (slot < 0) {
            return;
        }
        t.decodeStartSlot = -1;
        Slots s = t.decode == null ? null : byDecode.get(t.decode);
        if (s != null && slot < s.awaiting.length && s.awaiting[slot] > 0) {
            s.awaiting[slot]--;
        }
    }

    /** {@code t}'s stream ended (or was requeued) at {@code now}: not awaited any more, and its slot may be free. */
    void ended(Ticket t, long now) {
        started(t);
        Slots s = t.decode == null ? null : byDecode.get(t.decode);
        if (s != null) {
            int slot = slotOf(t);
            s.fit(slot);
            s.endedAt[slot] = now;
        }
    }

    /** Streams on {@code decode}'s rank {@code rank} (-1: the worker routed whole) awaiting their first token. */
    int awaiting(Worker decode, int rank) {
        Slots s = byDecode.get(decode);
        if (s == null) {
            return 0;
        }
        if (rank < 0) { // routed whole (its plan may have changed since some were counted per rank)
            return Arrays.stream(s.awaiting).sum();
        }
        return rank < s.awaiting.length ? s.awaiting[rank] : 0;
    }

    /** Whether a stream on {@code decode}'s rank {@code rank} (-1: any) ended less than {@code withinNanos} ago. */
    boolean endedWithin(Worker decode, int rank, long now, long withinNanos) {
        Slots s = byDecode.get(decode);
        if (s == null) {
            return false;
        }
        for (int i = 0; i < s.endedAt.length; i++) {
            if ((rank < 0 || i == rank) && s.endedAt[i] != 0 && now - s.endedAt[i] < withinNanos) {
                return true;
            }
        }
        return false;
    }

    /** The slot {@code t}'s stream holds on its decode: its rank, or 0 on a worker routed whole. */
    private static int slotOf(Ticket t) {
        return Math.max(0, t.ranks.decodeRank());
    }

    void remove(Worker w) {
        byDecode.remove(w);
    }
}
