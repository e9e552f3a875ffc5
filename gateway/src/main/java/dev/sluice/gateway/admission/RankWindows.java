package dev.sluice.gateway.admission;

import dev.sluice.gateway.routing.RankChoice;
import dev.sluice.gateway.routing.Worker;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Each worker's window per data-parallel rank, for a worker routed per rank
 * ({@code routing.dp_aware}, {@link dev.sluice.gateway.routing.RankPlan}): a rank is a scheduler of its
 * own (its running batch, its KV cache), so each holds its share of the worker's window, the window
 * divided by the ranks, rounded up. A worker has room when one of its ranks has; the request goes to
 * the rank that holds least of the gateway's work (streams on a decode or unified worker, prompt tokens
 * in a prefill's window), then the one that reports fewest requests of its own (others' traffic), then
 * the next in turn. With the gateway's own counts, exact and current, the ranks' running requests stay within one
 * of each other while requests wait for room. Guarded by the admission lock.
 */
final class RankWindows {
    /** No rank of the worker has room. */
    static final int NO_ROOM = -2;
    /** The worker is routed as a whole. */
    static final int WHOLE = -1;

    /** The caps of one worker's whole window (this replica's share under coordination). */
    record Caps(int prefillRequests, long prefillTokens, int streams) {
    }

    /** What one request needs: a place in the prefill window (with its tokens), a stream, or both (unified, direct). */
    record Need(boolean prefill, boolean stream, long tokens) {
    }

    private final Map<Worker, Ranks> byWorker = new HashMap<>();
    private final RankAffinity affinity = new RankAffinity();
    private final long staleNanos;

    RankWindows(long staleNanos) {
        this.staleNanos = staleNanos;
    }

    private static final class Ranks {
        int[] prefillRequests;
        long[] prefillTokens;
        int[] streams;
        int cursor;

        Ranks(int n) {
            prefillRequests = new int[n];
            prefillTokens = new long[n];
            streams = new int[n];
        }

        /** A worker that now reports another dp_size: what the kept ranks hold stays; releases past the end are dropped. */
        void resize(int n) {
            prefillRequests = java.util.Arrays.copyOf(prefillRequests, n);
            prefillTokens = java.util.Arrays.copyOf(prefillTokens, n);
            streams = java.util.Arrays.copyOf(streams, n);
            cursor %= n;
        }
    }

    private Ranks of(Worker w) {
        int n = w.rankPlan().ranks();
        if (n <= 1) {
            return null;
        }
        Ranks r = byWorker.computeIfAbsent(w, k -> new Ranks(n));
        if (r.streams.length != n) {
            r.resize(n);
        }
        return r;
    }

    void remove(Worker w) {
        byWorker.remove(w);
        affinity.remove(w);
    }

    /** The rank of {@code w} that takes {@code need} within {@code caps}, {@link #NO_ROOM}, or {@link #WHOLE}. */
    int pick(Worker w, Need need, Caps caps) {
        return pick(w, need, caps, RankAffinity.NONE, dev.sluice.gateway.routing.RoutingPolicy.NO_RANKS);
    }

    /**
     * As above, for a prompt of these {@link RankAffinity#blocks} of which each rank's own KV events
     * say it holds {@code eventTokens} (by rank; empty when the events do not tell): a prefill (PD)
     * goes to the rank holding its longest prefix whenever that rank has room (its share of the
     * window bounds it); a unified worker's request, whose stream holds the rank until it ends, goes
     * there only among the ranks with the fewest streams. The rank holding it is the one whose events
     * show the longest cached prefix; when no rank's events show any (nothing cached, or the events of
     * a prefix just sent have not come back yet: a prefill and a publish away), the rank the gateway
     * last sent it to.
     */
    int pick(Worker w, Need need, Caps caps, long[] blocks, int[] eventTokens) {
        Ranks r = of(w);
        if (r == null) {
            return WHOLE;
        }
        int n = r.streams.length;
        long now = System.nanoTime();
        int best = NO_ROOM;
        for (int k = 0; k < n; k++) {
            int i = (r.cursor + k) % n;
            if (!roomAt(r, i, need, caps)) {
                continue;
            }
            if (best == NO_ROOM || lighter(w, r, need, i, best, now)) {
                best = i;
            }
        }
        int cached = need.prefill() ? holder(r, need, caps, eventTokens, best) : -1;
        if (need.prefill() && cached < 0) {
            cached = affinity.rankOf(w, blocks, n);
        }
        if (cached >= 0 && cached != best && best >= 0 && roomAt(r, cached, need, caps)
                && (!need.stream() || r.streams[cached] == r.streams[best])) {
            return cached;
        }
        return best;
    }

    /**
     * The rank with room whose events show the longest cached prefix ({@code best} on a tie, else the
     * first), or -1 when the events do not tell or show none.
     */
    private static int holder(Ranks r, Need need, Caps caps, int[] eventTokens, int best) {
        if (eventTokens.length != r.streams.length) {
            return -1;
        }
        int holder = -1;
        for (int i = 0; i < eventTokens.length; i++) {
            if (eventTokens[i] > 0 && roomAt(r, i, need, caps)
                    && (holder < 0 || eventTokens[i] > eventTokens[holder]
                    || eventTokens[i] == eventTokens[holder] && i == best)) {
                holder = i;
            }
        }
        return holder;
    }

    /** Whether rank {@code i} has room for {@code need} in its share of the window (the caps divided by the ranks, rounded up). */
    private static boolean roomAt(Ranks r, int i, Need need, Caps caps) {
        int n = r.streams.length;
        if (need.stream() && r.streams[i] >= ceilDiv(caps.streams(), n)) {
            return false;
        }
        return !need.prefill() || r.prefillRequests[i] < ceilDiv(caps.prefillRequests(), n)
                && (r.prefillRequests[i] == 0 || r.prefillTokens[i] + need.tokens() <= ceilDiv(caps.prefillTokens(), n));
    }

    /** Whether rank {@code i} holds less than rank {@code j}: the gateway's own work first, then what the worker reports. */
    private boolean lighter(Worker w, Ranks r, Need need, int i, int j, long now) {
        // a stream (decode, unified) runs until it ends: streams first; a prefill's window is its prompt tokens
        int own = need.stream() ? Integer.compare(r.streams[i], r.streams[j])
                : Long.compare(r.prefillTokens[i], r.prefillTokens[j]);
        if (own == 0) {
            own = need.stream() ? Long.compare(r.prefillTokens[i], r.prefillTokens[j])
                    : Integer.compare(r.prefillRequests[i], r.prefillRequests[j]);
        }
        if (own != 0) {
            return own < 0;
        }
        double ri = w.telemetry().rankRequests(i, now, staleNanos);
        double rj = w.telemetry().rankRequests(j, now, staleNanos);
        return !Double.isNaN(ri) && !Double.isNaN(rj) && ri < rj; // equal: the earlier in turn
    }

    /** The pair was dispatched with {@code t}: each picks its rank (one for a unified worker) and holds it. */
    RankChoice dispatched(Worker p, Worker d, long tokens, long[] blocks, int[] eventTokens, Caps prefillCaps,
                          Caps decodeCaps) {
        if (p == d) {
            int rank = pick(p, new Need(true, true, tokens), prefillCaps, blocks, eventTokens);
            if (rank < 0) {
                return RankChoice.NONE;
            }
            hold(p, rank, true, true, tokens);
            affinity.dispatched(p, blocks, rank);
            int n = p.rankPlan().ranks();
            return new RankChoice(rank, n, rank, n);
        }
        int pr = pick(p, new Need(true, false, tokens), prefillCaps, blocks, eventTokens);
        int dr = pick(d, new Need(false, true, 0), decodeCaps);
        if (pr >= 0) {
            hold(p, pr, true, false, tokens);
            affinity.dispatched(p, blocks, pr);
        }
        if (dr >= 0) {
            hold(d, dr, false, true, 0);
        }
        return new RankChoice(Math.max(pr, WHOLE), pr >= 0 ? p.rankPlan().ranks() : 1, Math.max(dr, WHOLE),
                dr >= 0 ? d.rankPlan().ranks() : 1);
    }

    private void hold(Worker w, int rank, boolean prefill, boolean stream, long tokens) {
        Ranks r = of(w);
        if (prefill) {
            r.prefillRequests[rank]++;
            r.prefillTokens[rank] += tokens;
        }
        if (stream) {
            r.streams[rank]++;
        }
        r.cursor = (rank + 1) % r.streams.length;
    }

    /** {@code t}'s prefill is over: its rank's place in the prefill window comes back. */
    void prefillDone(Worker p, int rank, long tokens) {
        Ranks r = rank < 0 ? null : byWorker.get(p);
        if (r != null && rank < r.prefillRequests.length) {
            r.prefillRequests[rank] = Math.max(0, r.prefillRequests[rank] - 1);
            r.prefillTokens[rank] = Math.max(0, r.prefillTokens[rank] - tokens);
        }
    }

    /** Its stream has ended. */
    void streamEnded(Worker d, int rank) {
        Ranks r = rank < 0 ? null : byWorker.get(d);
        if (r != null && rank < r.streams.length) {
            r.streams[rank] = Math.max(0, r.streams[rank] - 1);
        }
    }

    /** The streams held on one rank of {@code d}, 0 when it is routed whole. */
    int streamsOn(Worker d, int rank) {
        Ranks r = rank < 0 ? null : byWorker.get(d);
        return r != null && rank < r.streams.length ? r.streams[rank] : 0;
    }

    /** Per rank, the requests {@code w} holds for its role (prefill window or streams); empty when routed whole. */
    List<Integer> snapshot(Worker w, boolean prefillRole) {
        Ranks r = byWorker.containsKey(w) ? of(w) : null;
        List<Integer> out = new ArrayList<>();
        if (r != null) {
            for (int i = 0; i < r.streams.length; i++) {
                out.add(prefillRole ? r.prefillRequests[i] : r.streams[i]);
            }
        }
        return out;
    }

    private static int ceilDiv(int a, int n) {
        return (int) ceilDiv((long) a, n);
    }

    private static long ceilDiv(long a, int n) {
        return a / n + (a % n == 0 ? 0 : 1);
    }
}
