package dev.sluice.gateway.admission;

import dev.sluice.gateway.routing.Worker;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The streams each decode (each rank of one routed per rank) holds that have not had their first
 * token: what tells a stream that waits in the decode for a slot from one the decode stalled on. A
 * decode runs a known number of streams at once (SGLang's running cap a rank); the gateway may hold
 * more (the decode lookahead, docs/admission.md), and which of them waits is the decode's choice, by
 * the order their KV lands, not the order of dispatch. A stream past its prefill with no first token
 * waits for a slot while the streams that did start fill the cap; with fewer started, a slot is free
 * and the silence is a stall. Counted only for streams on a decode of known cap (a direct decode's
 * too; not a unified worker's, whose first token is its prefill's end). A worker routed whole counts
 * in slot 0 and is read as the sum of its slots. Guarded by the admission lock.
 */
final class DecodeStarts {
    private final Map<Worker, int[]> awaiting = new HashMap<>();

    /** {@code t} was dispatched: a stream on a decode of known running cap awaits its first token. */
    void dispatched(Ticket t) {
        if (!t.stream || (t.decode == t.prefill && !t.direct) || t.decode.identity().runningPerRank() <= 0) {
            return;
        }
        int slot = Math.max(0, t.ranks.decodeRank());
        int[] a = awaiting.computeIfAbsent(t.decode, w -> new int[Math.max(1, slot + 1)]);
        if (slot >= a.length) {
            a = Arrays.copyOf(a, slot + 1);
            awaiting.put(t.decode, a);
        }
        a[slot]++;
        t.decodeStartSlot = slot;
    }

    /** {@code t}'s stream had its first token, or ended (or was requeued) before: it no longer awaits one. */
    void started(Ticket t) {
        int slot = t.decodeStartSlot;
        if (slot < 0) {
            return;
        }
        t.decodeStartSlot = -1;
        int[] a = t.decode == null ? null : awaiting.get(t.decode);
        if (a != null && slot < a.length && a[slot] > 0) {
            a[slot]--;
        }
    }

    /** Streams on {@code decode}'s rank {@code rank} (-1: the worker routed whole) awaiting their first token. */
    int awaiting(Worker decode, int rank) {
        int[] a = awaiting.get(decode);
        if (a == null) {
            return 0;
        }
        if (rank < 0) { // routed whole (its plan may have changed since some were counted per rank)
            int sum = 0;
            for (int n : a) {
                sum += n;
            }
            return sum;
        }
        return rank < a.length ? a[rank] : 0;
    }

    void remove(Worker w) {
        awaiting.remove(w);
    }
}
