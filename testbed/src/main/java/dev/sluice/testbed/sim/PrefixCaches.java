package dev.sluice.testbed.sim;

/**
 * A server's prefix caches, one per data-parallel rank: with DP attention each SGLang rank is a
 * scheduler with its own KV pool and radix cache (sgl-project/sglang
 * python/sglang/srt/managers/data_parallel_controller.py launches one scheduler per rank), so a prompt
 * cached on one rank is no hit on another. Each rank holds its share of the server's cache tokens,
 * as each holds its share of the KV pool ({@link DpRanks#poolTokens}). Each rank publishes its
 * own cache's events on its own stream ({@link KvEventPublisher}, port + rank). Event loop only; the
 * counters are readable from any thread.
 */
final class PrefixCaches {
    private final PrefixCache[] ranks;

    PrefixCaches(long capacityTokens, int dpSize) {
        ranks = new PrefixCache[dpSize];
        for (int r = 0; r < dpSize; r++) {
            ranks[r] = new PrefixCache(capacityTokens / dpSize);
        }
    }

    private PrefixCache of(int rank) {
        return ranks[Math.floorMod(rank, ranks.length)];
    }

    /** {@link PrefixCache#lookup} on the rank's cache. */
    int lookup(int rank, long[] prefix, int promptTokens) {
        return of(rank).lookup(prefix, promptTokens);
    }

    /** {@link PrefixCache#insert(long[], int[])} on the rank's cache. */
    void insert(int rank, long[] prefix, int[] tokens) {
        of(rank).insert(prefix, tokens);
    }

    /** Rank r's cache publishes to {@code publishers[r]}; null: none publishes. */
    void publishTo(KvEventPublisher[] publishers) {
        for (int r = 0; r < ranks.length; r++) {
            ranks[r].publishTo(publishers == null ? null : publishers[r]);
        }
    }

    int ranks() {
        return ranks.length;
    }

    void clear() {
        for (PrefixCache c : ranks) {
            c.clear();
        }
    }

    long hitTokens() {
        long sum = 0;
        for (PrefixCache c : ranks) {
            sum += c.hitTokens();
        }
        return sum;
    }

    long queryTokens() {
        long sum = 0;
        for (PrefixCache c : ranks) {
            sum += c.queryTokens();
        }
        return sum;
    }

    /** Hit tokens over query tokens of every rank, over the server's life; 0 before the first lookup. */
    double hitRate() {
        long q = queryTokens();
        return q == 0 ? 0 : (double) hitTokens() / q;
    }
}
