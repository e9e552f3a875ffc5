package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.routing.CacheAwarePolicy;
import dev.sluice.gateway.routing.LoadView;
import dev.sluice.gateway.routing.RoundRobinRouting;
import dev.sluice.gateway.routing.RoutingPolicy;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerTelemetry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What each worker has been given and not yet finished: per prefill worker, requests and prompt
 * tokens dispatched and not yet prefilled (its window); per decode worker, streams until they end
 * (a unified worker has both). Picks the pair for the next request: the candidates are the
 * routable workers with room (the windows stay the hard limit), and the role's
 * {@link RoutingPolicy} chooses among them (round robin, least load, power of two, cache aware).
 * Guarded by the controller's lock.
 */
final class WorkerWindows {
    /** The routing of one role: its policy, and who hears each decision (metrics). */
    record Routing(RoutingPolicy prefill, RoutingPolicy decode, RoutingObserver observer, long staleNanos) {
        static Routing roundRobin() {
            return new Routing(new RoundRobinRouting(), new RoundRobinRouting(), (role, policy, reason) -> { }, 0);
        }
    }

    private AdmissionConfig config; // under the admission lock
    private FleetShares shares; // this replica's share of each window (coordination), or null: the whole; under the lock
    private final WorkerSet workers;
    private final Routing routing;
    private final PrefillRates rates; // for the window in time (admission.prefill.max_inflight_time)
    private long now; // of the pick under way
    private final Map<Worker, Window> windows = new HashMap<>();
    private final LoadView prefillLoad = new View(true);
    private final LoadView decodeLoad = new View(false);
    private final List<Worker> candidates = new ArrayList<>();
    private RoutingPolicy.Choice prefillChoice;
    private RoutingPolicy.Choice decodeChoice;
    private final RankWindows ranks;
    private final DecodeStarts starts = new DecodeStarts();

    /** A worker added by a reload gets an empty window (under the admission lock). */
    void add(Worker w) {
        windows.putIfAbsent(w, new Window());
    }

    /** A drained worker's window goes (under the admission lock). */
    void remove(Worker w) {
        windows.remove(w);
        ranks.remove(w);
        starts.remove(w);
    }

    /** New window limits (under the admission lock); windows already holding more keep what they hold. */
    void reconfigure(AdmissionConfig next) {
        this.config = next;
    }

    /** This replica's share of each worker's window (coordination); null: the configured windows whole. */
    void shares(FleetShares next) {
        this.shares = next;
    }

    WorkerWindows(AdmissionConfig config, WorkerSet workers, Routing routing, PrefillRates rates) {
        this.config = config;
        this.workers = workers;
        this.routing = routing;
        this.rates = rates;
        this.ranks = new RankWindows(routing.staleNanos());
        for (Worker w : workers.all()) {
            windows.put(w, new Window());
        }
    }

    /**
     * A routable prefill worker whose window takes the ticket's tokens (alone, if it is larger),
     * or null. Workers in the ticket's {@code avoid} set (where it already failed) are taken only
     * when no other one fits.
     */
    Worker pickPrefill(Ticket t, long now) {
        this.now = now;
        prefillChoice = choose(workers.prefill(), true, t, routing.prefill(), prefillLoad);
        return prefillChoice == null ? null : prefillChoice.worker();
    }

    /** A routable decode worker below its stream cap, or null; {@code avoid} as for prefill. */
    Worker pickDecode(Ticket t, long now) {
        this.now = now;
        decodeChoice = choose(workers.decode(), false, t, routing.decode(), decodeLoad);
        return decodeChoice == null ? null : decodeChoice.worker();
    }

    /**
     * A decode worker that will also prefill the ticket itself (a short prompt skipping the prefill
     * hop): below its stream cap, with room in its own prefill window.
     */
    Worker pickDirectDecode(Ticket t, long now) {
        this.now = now;
        decodeChoice = choose(workers.decode(), null, t, routing.decode(), decodeLoad);
        prefillChoice = null;
        return decodeChoice == null ? null : decodeChoice.worker();
    }

    /** The picked pair was dispatched: the policies learn it (prefix trees) and the decisions are counted. */
    void routed(Ticket t) {
        if (prefillChoice != null) {
            t.uncachedHeld = Math.max(0, t.tokens - prefillChoice.cachedTokens());
            windows.get(prefillChoice.worker()).prefillUncached += t.uncachedHeld;
            dispatched(routing.prefill(), prefillChoice.worker(), t);
            routing.observer().decided(WorkerRole.PREFILL, routing.prefill(), prefillChoice.reason());
        }
        if (decodeChoice != null && (prefillChoice == null || decodeChoice.worker() != prefillChoice.worker())) {
            dispatched(routing.decode(), decodeChoice.worker(), t);
            routing.observer().decided(WorkerRole.DECODE, routing.decode(), decodeChoice.reason());
        }
        prefillChoice = null;
        decodeChoice = null;
    }

    /** {@code prefillRole}: TRUE prefill, FALSE decode, null a decode that prefills too (direct). */
    private RoutingPolicy.Choice choose(List<Worker> list, Boolean prefillRole, Ticket t, RoutingPolicy policy,
                                        LoadView load) {
        collect(list, prefillRole, t.tokens, t.avoid, false);
        if (candidates.isEmpty() && !t.avoid.isEmpty()) {
            collect(list, prefillRole, t.tokens, t.avoid, true);
        }
        if (candidates.isEmpty()) {
            return null;
        }
        if (Boolean.TRUE.equals(prefillRole) && policy.usesPrefix() && t.avoid.isEmpty() && waitForCache(list, t, policy)) {
            return null;
        }
        List<Worker> chosenFrom = List.copyOf(candidates);
        return policy.choose(chosenFrom, t.routing, load);
    }

    /**
     * The affinity wait: the prefill worker that holds most of the ticket's prefix has no room in
     * this replica's window, but will have when what this replica holds there is done. Waiting for it
     * beats sending the prompt where it is not cached when that work would be done sooner than the
     * other worker could recompute the prefix it lacks (both at the worker's rate). Without it, a
     * full window sends each conversation's next turn to a cold cache: three coordinated replicas,
     * each leased a third of every prefill's window, missed twice as often as one gateway
     * (docs/cache-affinity.md). Only for a worker this replica holds work at (its own completions
     * make the room, so the wait ends); the head of the queue waits, and those behind it with it.
     */
    private boolean waitForCache(List<Worker> list, Ticket t, RoutingPolicy policy) {
        List<Worker> all = new ArrayList<>(candidates);
        int roomy = all.size();
        for (Worker w : list) {
            if (w.routable() && !candidates.contains(w) && windows.get(w).prefillRequests > 0) {
                all.add(w);
            }
        }
        if (all.size() == roomy) {
            return false;
        }
        long[] cached = policy.cachedTokens(all, t.routing);
        long bestRoomy = 0;
        for (int i = 0; i < roomy; i++) {
            bestRoomy = Math.max(bestRoomy, cached[i]);
        }
        int full = -1;
        for (int i = roomy; i < all.size(); i++) {
            if (cached[i] > bestRoomy && (full < 0 || cached[i] > cached[full])) {
                full = i;
            }
        }
        if (full < 0) {
            return false;
        }
        // both at the worker's compute rate, so in tokens: what it still has to compute of what it
        // holds (cache hits deducted as expected at dispatch, progress not) against the prefix the
        // other worker would compute again
        if (windows.get(all.get(full)).prefillUncached >= cached[full] - bestRoomy) {
            return false;
        }
        if (!t.affinityWaited) {
            t.affinityWaited = true;
            routing.observer().decided(WorkerRole.PREFILL, policy, CacheAwarePolicy.AFFINITY_WAIT);
        }
        return true;
    }

    private static void dispatched(RoutingPolicy policy, Worker w, Ticket t) {
        policy.dispatched(w, t.routing);
    }

    private void collect(List<Worker> list, Boolean prefillRole, long tokens, Set<Worker> avoid, boolean avoidedToo) {
        candidates.clear();
        for (Worker w : list) {
            // a decode prefilling a short prompt itself (direct) is not held to the window in time
            boolean fits = prefillRole == null ? fits(w, false, 0) && fits(w, true, tokens)
                    : fits(w, prefillRole, tokens) && (!prefillRole || withinTime(w, tokens));
            if (w.routable() && avoid.contains(w) == avoidedToo && fits && rankRoom(w, prefillRole, tokens)) {
                candidates.add(w);
            }
        }
    }

    /** A worker routed per data-parallel rank has room only when one of its ranks has (its share of the window). */
    private boolean rankRoom(Worker w, Boolean prefillRole, long tokens) {
        boolean prefill = !Boolean.FALSE.equals(prefillRole);
        boolean stream = !Boolean.TRUE.equals(prefillRole) || workers.unified();
        return ranks.pick(w, new RankWindows.Need(prefill, stream, prefill ? tokens : 0), caps(w)) != RankWindows.NO_ROOM;
    }

    private RankWindows.Caps caps(Worker w) {
        return new RankWindows.Caps(windowRequests(w), tokenLimit(w), streamCap(w));
    }

    private boolean fits(Worker w, boolean prefill, long tokens) {
        Window win = windows.get(w);
        if (!prefill || workers.unified()) {
            // a unified worker's streams are capped like a decode's, its prompts windowed like a prefill's
            boolean streamRoom = win.streams < streamCap(w);
            if (!prefill) {
                return streamRoom;
            }
            if (!streamRoom) {
                return false;
            }
        }
        return win.prefillRequests < windowRequests(w)
                && (win.prefillRequests == 0 || win.prefillTokens + tokens <= tokenLimit(w));
    }

    /**
     * The window in time ({@code admission.prefill.max_inflight_time}). A worker that holds work is
     * given more only while that work would be done within the window at its known rate (its
     * progress since its last completion deducted): the next request is there before it runs dry,
     * and no more. What is not sent waits in the gateway's queue, where the order is still the
     * gateway's (deadlines, classes, the longest shed first); what was sent is in the worker's own
     * queue in arrival order. A window counted in tokens alone commits 13 s of a 2,500 tokens/s
     * prefill (bench-overload scenario 3). Under coordination the time is this replica's share of
     * it, in proportion to its share of the token window.
     *
     * <p>While the worker's rate is only the guess ({@code initial_prefill_tokens_per_second}): a
     * second request always (one computing, one waiting behind it: the worker never runs dry while
     * its rate is learned, and the second's interval measures its compute alone, where a request
     * sent to an idle worker also measures the hop, ~0.4 s in bench-overload), more only while what
     * it holds plus the new prompt fit in the window at the guessed rate, no progress assumed.
     */
    private boolean withinTime(Worker w, long tokens) {
        long limitNanos = config.prefillMaxInflightTime().toNanos();
        Window win = windows.get(w);
        if (limitNanos == 0 || win.prefillRequests == 0) {
            return true;
        }
        double seconds = limitNanos / 1e9
                * (shares == null ? 1.0 : (double) tokenLimit(w) / config.prefillMaxInflightTokens());
        if (!rates.knows(w)) {
            return win.prefillRequests == 1 || win.prefillTokens + tokens <= seconds * rates.rateOf(w);
        }
        return rates.secondsUntilDone(w, 0, now) < seconds;
    }

    private int streamCap(Worker w) {
        int fleet = config.decodeMaxInflightStreams();
        return shares == null ? fleet : shares.decodeStreams(w.url(), fleet);
    }

    private int windowRequests(Worker w) {
        int fleet = config.prefillMaxInflightRequests();
        return shares == null ? fleet : shares.prefillRequests(w.url(), fleet);
    }

    private long tokenLimit(Worker w) {
        long fleet = config.prefillMaxInflightTokens();
        return shares == null ? fleet : shares.prefillTokens(w.url(), fleet);
    }

    /** Prompt tokens in a prefill worker's window (for the expected prefill time of a new request). */
    long windowTokens(Worker prefill) {
        return windows.get(prefill).prefillTokens;
    }

    /** The windows and the workers' own telemetry, as the routing policies see them. */
    private final class View implements LoadView {
        private final boolean prefillRole;

        View(boolean prefillRole) {
            this.prefillRole = prefillRole;
        }

        @Override
        public long windowTokens(Worker w) {
            return windows.get(w).prefillTokens;
        }

        @Override
        public int windowRequests(Worker w) {
            Window win = windows.get(w);
            return prefillRole ? win.prefillRequests : win.streams;
        }

        @Override
        public double reportedQueue(Worker w) {
            return w.telemetry().waitingRequests(w.role(), System.nanoTime(), routing.staleNanos());
        }

        @Override
        public double kvUsage(Worker w) {
            return w.telemetry().value(WorkerTelemetry.Field.TOKEN_USAGE, System.nanoTime(), routing.staleNanos());
        }

        @Override
        public double reportedPromptTokens(Worker w) {
            return w.telemetry().value(WorkerTelemetry.Field.PROMPT_TOKENS_TOTAL, System.nanoTime(), routing.staleNanos());
        }
    }

    /** The pair takes the request: the windows hold it, and each worker routed per rank gives it a rank. */
    dev.sluice.gateway.routing.RankChoice dispatched(Worker prefill, Worker decode, long tokens, long[] blocks,
                                                     dev.sluice.gateway.routing.RoutingRequest request) {
        Window p = windows.get(prefill);
        p.prefillRequests++;
        p.prefillTokens += tokens;
        windows.get(decode).streams++;
        int[] eventTokens = prefill.rankPlan().perRank() ? routing.prefill().cachedTokensByRank(prefill, request)
                : dev.sluice.gateway.routing.RoutingPolicy.NO_RANKS;
        return ranks.dispatched(prefill, decode, tokens, blocks, eventTokens, caps(prefill), caps(decode));
    }

    /** {@code t} was dispatched (its ranks chosen): its stream awaits its decode's first token. */
    void awaitDecodeStart(Ticket t) {
        starts.dispatched(t);
    }

    /** {@code t}'s decode gave its first token. */
    void decodeStarted(Ticket t) {
        starts.started(t);
    }

    /**
     * Whether a stream with no first token on {@code decode}'s rank {@code rank} (-1: whole) may wait for a slot
     * there: more held than it runs and the started fill its cap, or one ended under {@code graceNanos} ago.
     */
    boolean waitingForSlot(Worker decode, int rank, long now, long graceNanos) {
        int cap = decode.identity().runningPerRank();
        Window win = windows.get(decode);
        if (cap <= 0 || win == null) {
            return false;
        }
        int held = rank >= 0 ? ranks.streamsOn(decode, rank) : win.streams;
        int slots = rank >= 0 ? cap : cap * Math.max(1, decode.identity().dpSize());
        return held > slots && held - starts.awaiting(decode, rank) >= slots
                || starts.endedWithin(decode, rank, now, graceNanos);
    }

    /** The prefill windows' {@code prefillUncached}, summed (back to 0 when every prefill is done). */
    long uncachedHeld() {
        long sum = 0;
        for (Window w : windows.values()) {
            sum += w.prefillUncached;
        }
        return sum;
    }

    void prefillDone(Ticket t) {
        ranks.prefillDone(t.prefill, t.ranks.prefillRank(), t.tokens);
        Window p = windows.get(t.prefill);
        p.prefillRequests--;
        p.prefillTokens -= t.tokens;
        p.prefillUncached -= t.uncachedHeld;
        t.uncachedHeld = 0;
    }

    void decodeEnded(Ticket t, long now) {
        starts.ended(t, now); // no longer awaited, if it was; its slot may be free
        ranks.streamEnded(t.decode, t.ranks.decodeRank());
        windows.get(t.decode).streams--;
    }

    /** Each worker's window and streams as they are now. */
    Map<Worker, WorkerWindow> snapshot() {
        Map<Worker, WorkerWindow> out = new HashMap<>();
        windows.forEach((w, win) -> out.put(w, new WorkerWindow(w.role(), win.prefillRequests, win.prefillTokens,
                win.streams, ranks.snapshot(w, w.role() != WorkerRole.DECODE && !workers.unified()))));
        return out;
    }

    /** Admission's idea of each worker's load, for the routing policies. */
    private static final class Window {
        /** Dispatched and not yet prefilled (a prefill's or unified worker's window). */
        int prefillRequests;
        /** Their prompt tokens not expected in its cache (the prefix policy's match deducted): work it still has. */
        long prefillUncached;
        long prefillTokens;
        /** Dispatched and not yet ended (a decode's or unified worker's streams). */
        int streams;
    }
}
