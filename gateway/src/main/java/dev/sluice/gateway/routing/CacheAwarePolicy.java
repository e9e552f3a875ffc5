package dev.sluice.gateway.routing;

import dev.sluice.gateway.config.RoutingConfig.CacheAware;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * {@code cache_aware}: sends a prompt to the worker that most likely holds its prefix in its
 * prefix cache (SGLang radix cache / HiCache, vLLM automatic prefix caching), as remembered by a
 * {@link PrefixTree} of what each worker was sent, unless that worker is overloaded.
 *
 * <ul>
 *   <li>match ratio = characters the best candidate holds / key length (the key cut to the tree's
 *       per-worker bound). At or above {@code match_threshold}: the best-matching candidate
 *       (ties: less loaded, then sent least lately), reason {@code prefix_hit}.</li>
 *   <li>Balance guard on a hit: with {@code best} the best match's load and {@code min} the least
 *       loaded candidate's, when {@code best - min > balance_abs_threshold} and
 *       {@code best > balance_rel_threshold x min}, the least loaded wins: {@code balance_override}.
 *       Load here is prefill: pending prompt tokens as {@link WorkerLoad} counts them (window plus
 *       the worker's queue beyond it, in tokens); decode: streams in the window.</li>
 *   <li>Share guard on a hit (the long view the balance guard lacks: at moderate load the windows
 *       are nearly empty, and a hot system prompt would pile its whole traffic onto one worker):
 *       when the best match was sent more than {@code balance_share_threshold} x the candidates'
 *       mean of prompt tokens lately ({@link RecentLoad}, half-life {@code balance_share_half_life}),
 *       the request goes to the best-matching candidate below that mean, if that costs at most
 *       {@code balance_share_max_recompute} more prompt tokens to compute there (a new
 *       conversation on a hot prompt moves; a long one stays with its history):
 *       {@code share_override}. The prompt now cached there pulls that conversation's next turns
 *       along. "Lately" is, per worker, the larger of what this gateway (with coordination: the
 *       fleet's replicas, {@link FleetRoutedLoad}) sent it and what the worker's own prompt-token
 *       counter grew by ({@link ReportedLoad}): the latter counts every replica's traffic, so
 *       uncoordinated replicas judge the fleet's share, not their own lumpy part of it.</li>
 *   <li>Below the threshold: the least loaded candidate (ties: the one sent least lately, as the
 *       share guard counts it, so new prefixes even out the fleet's traffic; then the smallest tree,
 *       then in turn), reason {@code prefix_miss}.</li>
 * </ul>
 * The key is remembered for the worker only once the request is {@link #dispatched}. Admission
 * calls the overloads that take the key as a {@link PrefixTree.Key} prepared off its lock.
 *
 * <p>With the workers' KV events ({@link KvCacheView}, {@code routing.kv_events}): when the request
 * has token ids, each candidate whose view is fresh is matched by what its cache holds by its own
 * events, in tokens (the same on every gateway replica); a candidate whose view is not fresh
 * (never heard from, or silent after work) by the local tree, what this gateway sent it, in tokens
 * too. So one worker without events leaves the others matched on theirs (before, any candidate not
 * fresh put the whole decision on the local tree). With no candidate fresh, or no token ids, the
 * local tree decides as above. The tree is fed either way, so the fallback stays warm
 * (docs/cache-affinity.md).
 */
public final class CacheAwarePolicy implements RoutingPolicy {
    public static final String NAME = "cache_aware";
    public static final String PREFIX_HIT = "prefix_hit";
    public static final String PREFIX_MISS = "prefix_miss";
    public static final String BALANCE_OVERRIDE = "balance_override";
    public static final String SHARE_OVERRIDE = "share_override";
    /**
     * Not a choice: the request waited for the worker holding its prefix, whose window was full
     * (admission's affinity wait; counted once per request, which is counted again by where it went).
     */
    public static final String AFFINITY_WAIT = "affinity_wait";

    private final CacheAware settings;
    private final WorkerLoad load;
    private final PrefixTree<Worker> tree;
    private final RecentLoad recent;
    private final ReportedLoad reported;
    private final Optional<KvCacheView> cacheView;
    private final Optional<FleetRoutedLoad> fleet;
    private int cursor;

    public CacheAwarePolicy(WorkerRole role, CacheAware settings) {
        this(role, settings, Optional.empty());
    }

    public CacheAwarePolicy(WorkerRole role, CacheAware settings, Optional<KvCacheView> view) {
        this(role, settings, System::nanoTime, view);
    }

    CacheAwarePolicy(WorkerRole role, CacheAware settings, LongSupplier nanoClock) {
        this(role, settings, nanoClock, Optional.empty());
    }

    CacheAwarePolicy(WorkerRole role, CacheAware settings, LongSupplier nanoClock, Optional<KvCacheView> view) {
        this(role, settings, nanoClock, view, Optional.empty());
    }

    /**
     * With {@code fleet} (coordinated replicas): the share guard judges the fleet's "lately", this
     * replica's figures plus what the others reported ({@link FleetRoutedLoad}); this replica's
     * figures are published to it after each dispatch.
     */
    public CacheAwarePolicy(WorkerRole role, CacheAware settings, Optional<KvCacheView> view,
                            Optional<FleetRoutedLoad> fleet) {
        this(role, settings, System::nanoTime, view, fleet);
    }

    CacheAwarePolicy(WorkerRole role, CacheAware settings, LongSupplier nanoClock, Optional<KvCacheView> view,
                     Optional<FleetRoutedLoad> fleet) {
        this.fleet = Objects.requireNonNull(fleet, "fleet");
        this.cacheView = Objects.requireNonNull(view, "view");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.load = new WorkerLoad(role);
        this.tree = new PrefixTree<>(settings.maxTreeSize());
        this.recent = new RecentLoad(settings.shareHalfLife().toNanos(), nanoClock);
        this.reported = new ReportedLoad(settings.shareHalfLife().toNanos(), nanoClock);
    }

    @Override
    public boolean usesPrefix() {
        return true;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int[] cachedTokensByRank(Worker worker, RoutingRequest request) {
        if (cacheView.isEmpty() || request.promptChain().length == 0) {
            return NO_RANKS;
        }
        return cacheView.get().rankMatch(worker, request.promptChain());
    }

    @Override
    public Choice choose(List<Worker> candidates, RoutingRequest request, LoadView view) {
        int n = candidates.size();
        boolean[] fresh = freshViews(candidates, request);
        KvCacheView events = fresh == null ? null : cacheView.get();
        int[] matched;
        long keyLength; // what the match ratio is of
        long promptLength; // the whole prompt, in the match's unit (the share guard's tokens per unit)
        if (events != null) {
            matched = eventMatch(events, fresh, candidates, request);
            keyLength = request.promptIds().length;
            promptLength = keyLength;
            events.decided(KvCacheView.Source.KV_EVENTS);
        } else {
            PrefixTree.Key key = request.prefix(); // prepared when the request was built, off the admission lock
            matched = tree.match(key, candidates);
            keyLength = Math.min(key.length(), tree.maxSizePerWorker());
            promptLength = key.length();
            cacheView.ifPresent(v -> v.decided(KvCacheView.Source.LOCAL_TREE));
        }
        // prompt tokens per unit of the match (the tree matches characters)
        double unit = events != null ? 1 : (double) Math.max(0, request.tokens()) / Math.max(1, promptLength);
        double[] scores = load.scores(candidates, request, view);
        double[] guard = load.decode() ? streams(candidates, view) : scores;

        int best = 0;
        double[] lately = null; // the long view, read once and only when something turns on it
        for (int i = 1; i < n; i++) {
            boolean better = matched[i] > matched[best];
            if (!better && matched[i] == matched[best] && matched[i] > 0) {
                if (guard[i] != guard[best]) {
                    better = guard[i] < guard[best];
                } else {
                    // two homes of the same prefix, equally loaded now (at moderate load: both idle):
                    // the one sent least lately, or a replica's ties would all go to the first in order
                    lately = lately != null ? lately : lately(candidates, view);
                    better = lately[i] < lately[best];
                }
            }
            if (better) {
                best = i;
            }
        }
        double ratio = keyLength == 0 ? 0 : (double) matched[best] / keyLength;
        if (matched[best] > 0 && ratio >= settings.matchThreshold()) {
            int least = WorkerLoad.argMin(guard, cursor);
            if (imbalanced(guard[best], guard[least])) {
                cursor = least + 1;
                return new Choice(candidates.get(least), BALANCE_OVERRIDE, Math.round(matched[least] * unit));
            }
            int spill = shareSpill(candidates, request, view, lately, promptLength, matched, best);
            if (spill >= 0) {
                return new Choice(candidates.get(spill), SHARE_OVERRIDE, Math.round(matched[spill] * unit));
            }
            return new Choice(candidates.get(best), PREFIX_HIT, Math.round(matched[best] * unit));
        }
        // the smallest cache on a tie: by the events' blocks only when every candidate's view holds
        int pick = leastLoadedLeastLately(candidates, scores, lately != null ? lately : lately(candidates, view),
                events != null && allOf(fresh) ? events : null);
        cursor = pick + 1;
        return new Choice(candidates.get(pick), PREFIX_MISS, Math.round(matched[pick] * unit));
    }

    /** Prompt tokens each worker holds of the request: by the KV events when they may decide, else by the tree. */
    @Override
    public long[] cachedTokens(List<Worker> workers, RoutingRequest request) {
        long[] out = new long[workers.size()];
        boolean[] fresh = freshViews(workers, request);
        if (fresh != null) {
            int[] m = eventMatch(cacheView.get(), fresh, workers, request);
            for (int i = 0; i < out.length; i++) {
                out[i] = m[i];
            }
            return out;
        }
        PrefixTree.Key key = request.prefix();
        int[] m = tree.match(key, workers);
        double tokensPerChar = (double) Math.max(0, request.tokens()) / Math.max(1, key.length());
        for (int i = 0; i < out.length; i++) {
            out[i] = Math.round(m[i] * tokensPerChar);
        }
        return out;
    }

    @Override
    public void dispatched(Worker worker, RoutingRequest request) {
        tree.insert(request.prefix(), worker);
        recent.add(worker, request.tokens());
        fleet.ifPresent(f -> f.own(recent));
        cacheView.ifPresent(v -> v.dispatched(worker, request.promptChain()));
    }

    /**
     * Which candidates' KV event views are fresh, when the events may take part in this request's match
     * (it has token ids, and at least one candidate's view is fresh); else null: the local tree decides.
     */
    private boolean[] freshViews(List<Worker> candidates, RoutingRequest request) {
        if (cacheView.isEmpty() || request.promptIds().length == 0) {
            return null;
        }
        KvCacheView v = cacheView.get();
        boolean[] fresh = new boolean[candidates.size()];
        boolean any = false;
        for (int i = 0; i < fresh.length; i++) {
            fresh[i] = v.fresh(candidates.get(i));
            any |= fresh[i];
        }
        return any ? fresh : null;
    }

    /**
     * Prompt tokens each candidate holds: by its events where its view is fresh, else by the local tree
     * (characters, at the prompt's tokens per character, at most the prompt).
     */
    private int[] eventMatch(KvCacheView events, boolean[] fresh, List<Worker> candidates, RoutingRequest request) {
        int[] matched = events.match(candidates, request.promptChain()); // hashed on the event loop
        if (!allOf(fresh)) {
            PrefixTree.Key key = request.prefix();
            int[] local = tree.match(key, candidates);
            int ids = request.promptIds().length;
            double tokensPerChar = (double) ids / Math.max(1, key.length());
            for (int i = 0; i < matched.length; i++) {
                if (!fresh[i]) {
                    matched[i] = (int) Math.min(ids, Math.round(local[i] * tokensPerChar));
                }
            }
        }
        return matched;
    }

    private static boolean allOf(boolean[] b) {
        for (boolean x : b) {
            if (!x) {
                return false;
            }
        }
        return true;
    }

    /** Characters of prompt prefix remembered for {@code worker}; safe to read from the metrics thread. */
    @Override
    public long stateSize(Worker worker) {
        return tree.size(worker);
    }

    /** Forgets what {@code worker} was sent: its cache is gone (it restarted, or was replaced). */
    public void forget(Worker worker) {
        tree.remove(worker);
        recent.forget(worker);
        reported.forget(worker);
    }

    /**
     * The share guard: the candidate to take the request from an over-share best match, or -1.
     * Acts only once the best match's excess over the mean is at least this request's size, so a
     * single early request does not count as a trend. {@code known}: the long view if this decision
     * already read it, else null.
     */
    private int shareSpill(List<Worker> candidates, RoutingRequest request, LoadView view, double[] known,
                           long keyLength, int[] matched, int best) {
        int n = candidates.size();
        if (settings.shareThreshold() == 0 || n < 2) {
            return -1;
        }
        double[] lately = known != null ? known : lately(candidates, view);
        double mean = 0;
        for (double v : lately) {
            mean += v / n;
        }
        long tokens = Math.max(1, request.tokens());
        if (lately[best] <= settings.shareThreshold() * mean || lately[best] - mean < tokens) {
            return -1;
        }
        int alt = -1;
        for (int i = 0; i < n; i++) {
            if (i != best && lately[i] < mean
                    && (alt < 0 || matched[i] > matched[alt] || (matched[i] == matched[alt] && lately[i] < lately[alt]))) {
                alt = i;
            }
        }
        if (alt < 0) {
            return -1;
        }
        double tokensPerChar = (double) tokens / Math.max(1, keyLength);
        double recompute = (matched[best] - matched[alt]) * tokensPerChar;
        return recompute <= settings.shareMaxRecompute() ? alt : -1;
    }

    private boolean imbalanced(double bestLoad, double minLoad) {
        return bestLoad - minLoad > settings.balanceAbsThreshold() && bestLoad > settings.balanceRelThreshold() * minLoad;
    }

    /**
     * Prompt tokens each candidate was sent lately, the share guard's long view: per worker the larger
     * of what this gateway sent it (plus, coordinated, what its peers reported) and what the worker's
     * own counter grew by (every replica's traffic; {@link ReportedLoad}).
     */
    private double[] lately(List<Worker> candidates, LoadView view) {
        int n = candidates.size();
        double[] lately = recent.of(candidates);
        if (fleet.isPresent()) {
            FleetRoutedLoad f = fleet.get();
            for (int i = 0; i < n; i++) {
                lately[i] += f.peersNow(candidates.get(i));
            }
        }
        double[] told = reported.of(candidates, view);
        if (told != null) {
            for (int i = 0; i < n; i++) {
                lately[i] = Math.max(lately[i], told[i]); // ours leads theirs by a poll and a prefill
            }
        }
        return lately;
    }

    /**
     * A miss goes to the least loaded candidate; ties (at moderate load the windows are mostly empty)
     * to the one sent least lately, so new prefixes even out the fleet's long view of load, the one
     * the share guard judges hits by (placed by this replica's turn alone, three replicas' misses
     * piled up where the guard then moved conversations away from their caches); then the smallest
     * cache (the event view's blocks when it decides, else the local tree's characters), then in turn.
     */
    private int leastLoadedLeastLately(List<Worker> candidates, double[] scores, double[] lately, KvCacheView events) {
        int n = candidates.size();
        int first = Math.floorMod(cursor, n);
        int pick = first;
        long pickSize = cacheSize(candidates.get(pick), events);
        for (int k = 1; k < n; k++) {
            int i = (first + k) % n;
            long size = cacheSize(candidates.get(i), events);
            boolean tie = scores[i] == scores[pick];
            if (scores[i] < scores[pick] || (tie && lately[i] < lately[pick])
                    || (tie && lately[i] == lately[pick] && size < pickSize)) {
                pick = i;
                pickSize = size;
            }
        }
        return pick;
    }

    private long cacheSize(Worker w, KvCacheView events) {
        return events == null ? tree.size(w) : events.blocks(w);
    }

    private static double[] streams(List<Worker> candidates, LoadView view) {
        double[] out = new double[candidates.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = view.windowRequests(candidates.get(i));
        }
        return out;
    }
}
