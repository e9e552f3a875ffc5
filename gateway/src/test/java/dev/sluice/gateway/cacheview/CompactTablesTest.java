package dev.sluice.gateway.cacheview;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The KV view's primitive tables against the boxed collections they replaced, operation by
 * operation (random inserts, re-stores, removals, evictions, clears; colliding and zero keys),
 * and the view's rules on top of them: least recently stored forgotten first, a rank cleared
 * alone, a prefix matched when any rank holds it.
 */
class CompactTablesTest {

    @Test
    void engineTableBehavesAsAnInsertionOrderedMapWhoseReStoreMovesToTheEnd() {
        Random rnd = new Random(29);
        int limit = 500;
        EngineBlockTable t = new EngineBlockTable(limit);
        LinkedHashMap<Long, Long> model = new LinkedHashMap<>();
        for (int op = 0; op < 200_000; op++) {
            long hash = rnd.nextInt(2_000) - 1_000; // zero and negatives included, many collisions
            int e = t.find(hash);
            assertThat(e >= 0).isEqualTo(model.containsKey(hash));
            switch (rnd.nextInt(10)) {
                case 0, 1, 2 -> {
                    if (e >= 0) {
                        t.remove(e);
                        model.remove(hash);
                    }
                }
                case 3 -> {
                    if (t.size() > 0) {
                        long oldest = model.keySet().iterator().next();
                        assertThat(t.state(t.oldest())).isEqualTo(model.get(oldest));
                        t.remove(t.oldest());
                        model.remove(oldest);
                    }
                }
                default -> {
                    long state = rnd.nextLong();
                    if (e >= 0) {
                        t.restore(e, state);
                        model.remove(hash);
                    } else {
                        if (t.size() >= limit) {
                            long oldest = model.keySet().iterator().next();
                            t.remove(t.oldest());
                            model.remove(oldest);
                        }
                        t.insert(hash, state, limit);
                    }
                    model.put(hash, state);
                }
            }
            assertThat(t.size()).isEqualTo(model.size());
        }
        List<Long> states = new ArrayList<>();
        t.forEachState(states::add);
        assertThat(states).as("oldest stored first").containsExactlyElementsOf(model.values());
        assertThat(t.capacity()).isLessThanOrEqualTo(limit);
        assertThat(t.bytes()).isLessThanOrEqualTo(EngineBlockTable.bytesFor(limit));

        t.resize(Math.max(1, t.size()));
        List<Long> after = new ArrayList<>();
        t.forEachState(after::add);
        assertThat(after).as("order kept through a resize").isEqualTo(states);
        for (Map.Entry<Long, Long> en : model.entrySet()) {
            assertThat(t.state(t.find(en.getKey()))).isEqualTo(en.getValue());
        }
    }

    @Test
    void chainKeysCountLikeAMultiset() {
        Random rnd = new Random(7);
        ChainKeys keys = new ChainKeys(10_000);
        Map<Long, Integer> model = new HashMap<>();
        for (int op = 0; op < 200_000; op++) {
            long key = rnd.nextInt(3_000) - 1_500;
            if (rnd.nextInt(3) == 0) {
                keys.release(key);
                model.computeIfPresent(key, (k, n) -> n > 1 ? n - 1 : null);
            } else if (model.size() < 10_000) {
                keys.add(key, 10_000);
                model.merge(key, 1, Integer::sum);
            }
            assertThat(keys.contains(key)).isEqualTo(model.containsKey(key));
            assertThat(keys.size()).isEqualTo(model.size());
        }
        for (long k = -1_500; k < 1_500; k++) {
            assertThat(keys.contains(k)).isEqualTo(model.containsKey(k));
        }
        keys.clear(10_000);
        assertThat(keys.size()).isZero();
        assertThat(keys.contains(0)).isFalse();
    }

    private static KvEventBatch batch(KvEvent... events) {
        return new KvEventBatch(0, List.of(events), 0);
    }

    /** One page of 1 token stored under engine hash {@code h}, continuing {@code parent}. */
    private static KvEvent page(long h, OptionalLong parent, int token) {
        return new KvEvent.Stored(new long[] {h}, parent, new int[] {token}, 1);
    }

    @Test
    void theLeastRecentlyStoredIsForgottenFirstAndAReStoreCountsAsRecent() {
        WorkerBlocks w = new WorkerBlocks(3);
        // three prompts of one token each: a, b, c
        w.apply(batch(page(1, OptionalLong.empty(), 10), page(2, OptionalLong.empty(), 20),
                page(3, OptionalLong.empty(), 30)), 1);
        w.apply(batch(page(1, OptionalLong.empty(), 10)), 2); // a stored again: now the most recent
        w.apply(batch(page(4, OptionalLong.empty(), 40)), 3); // over the limit: b goes, not a
        assertThat(held(w, 10)).isTrue();
        assertThat(held(w, 20)).isFalse();
        assertThat(held(w, 30)).isTrue();
        assertThat(held(w, 40)).isTrue();
        assertThat(w.evicted()).isEqualTo(1);
        assertThat(w.size()).isEqualTo(3);
    }

    @Test
    void aRankIsClearedAloneAndAPrefixAnyRankHoldsMatchesTheWorkerAndThatRank() {
        WorkerBlocks w = new WorkerBlocks(100, 2);
        w.apply(0, batch(page(1, OptionalLong.empty(), 10), page(2, OptionalLong.of(1), 11)), 1);
        w.apply(1, batch(page(7, OptionalLong.empty(), 10)), 1); // rank 1 holds the first block only
        long[] chain = dev.sluice.gateway.routing.PromptChain.of(new int[] {10, 11});
        assertThat(w.matchedBlocks(chain, 1)).isEqualTo(2);
        assertThat(w.rankMatchedBlocks(0, chain, 1)).isEqualTo(2);
        assertThat(w.rankMatchedBlocks(1, chain, 1)).as("each rank its own cache").isEqualTo(1);
        assertThat(w.size()).as("each rank's blocks counted: the first block is cached twice").isEqualTo(3);

        w.clear(0);
        assertThat(w.matchedBlocks(chain, 1)).as("rank 1 still holds the first block").isEqualTo(1);
        w.apply(1, batch(new KvEvent.Removed(new long[] {7})), 2);
        assertThat(w.matchedBlocks(chain, 1)).isZero();
        assertThat(w.size()).isZero();
    }

    @Test
    void aLoweredLimitForgetsTheOldestAndGivesTheMemoryBack() {
        WorkerBlocks w = new WorkerBlocks(10_000);
        KvEvent[] pages = new KvEvent[5_000];
        for (int i = 0; i < pages.length; i++) {
            pages[i] = page(i + 1, OptionalLong.empty(), i);
        }
        w.apply(batch(pages), 1);
        long before = w.bytes();
        w.limit(1_000);
        w.fit();
        assertThat(w.size()).isEqualTo(1_000);
        assertThat(held(w, 4_999)).as("the newest kept").isTrue();
        assertThat(held(w, 4_000)).as("the oldest kept").isTrue();
        assertThat(held(w, 3_999)).as("older ones forgotten").isFalse();
        assertThat(w.bytes()).isLessThan(before).isLessThanOrEqualTo(WorkerBlocks.bytesFor(1, 1_000));
    }

    @Test
    void theBudgetIsSharedSoEveryWorkerRankFitsItsArraysAtTheirWorst() {
        long budget = 8L << 20;
        int limit = CacheView.limitFor(new int[] {1, 4, 2}, 1L << 20, budget);
        assertThat(WorkerBlocks.bytesFor(1, limit) + WorkerBlocks.bytesFor(4, limit) + WorkerBlocks.bytesFor(2, limit))
                .isLessThanOrEqualTo(budget);
        assertThat(WorkerBlocks.bytesFor(1, limit + 1) + WorkerBlocks.bytesFor(4, limit + 1)
                + WorkerBlocks.bytesFor(2, limit + 1)).as("the largest that fits").isGreaterThan(budget);
        assertThat(CacheView.limitFor(new int[] {1}, 100, budget)).as("max_blocks_per_worker lower: it wins")
                .isEqualTo(100);
    }

    private static boolean held(WorkerBlocks w, int token) {
        return w.matchedBlocks(dev.sluice.gateway.routing.PromptChain.of(new int[] {token}), 1) == 1;
    }
}
