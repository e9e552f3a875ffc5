package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.cacheview.CacheView;
import dev.sluice.gateway.cacheview.KvEvent;
import dev.sluice.gateway.cacheview.KvEventBatch;
import dev.sluice.gateway.config.RoutingConfig;
import dev.sluice.gateway.config.RoutingConfig.CacheAware;
import dev.sluice.gateway.routing.RoutingFixtures.FakeLoad;
import dev.sluice.gateway.routing.RoutingPolicy.Choice;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/**
 * cache_aware with the workers' KV event view: each candidate whose view is fresh is matched by its events,
 * one whose view is not by the local tree; no fresh candidate (or no token ids): the local tree decides.
 */
class CacheAwareKvViewTest {
    private static final long SECOND = 1_000_000_000L;
    private final List<Worker> ws = RoutingFixtures.workers(WorkerRole.PREFILL, 3);
    private final FakeLoad load = new FakeLoad();
    private final AtomicLong clock = new AtomicLong(1_000 * SECOND);
    private final CacheView view = new CacheView(ws, 1_000, 30 * SECOND, clock::get);
    private final CacheAwarePolicy policy = new CacheAwarePolicy(WorkerRole.PREFILL,
            CacheAware.defaults(RoutingConfig.DEFAULT_PREFILL_BALANCE_ABS), clock::get, Optional.of(view));
    private final int[] ids = IntStream.range(0, 640).toArray(); // 40 blocks of 16

    private void heard(Worker w, KvEvent... events) {
        view.of(w).orElseThrow().apply(new KvEventBatch(0, List.of(events), 0), clock.get());
    }

    @Test
    void theWorkerWhoseEventsHoldThePromptWinsThoughThisReplicaNeverSentIt() {
        heard(ws.get(0), new KvEvent.Cleared());
        heard(ws.get(1), new KvEvent.Cleared());
        heard(ws.get(2), new KvEvent.Stored(new long[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
                19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30}, OptionalLong.empty(),
                java.util.Arrays.copyOf(ids, 480), 16)); // 30 of the prompt's 40 blocks
        RoutingRequest r = new RoutingRequest("k".repeat(4000), 640, ids);
        Choice c = policy.choose(ws, r, load);
        assertThat(c.worker()).isSameAs(ws.get(2));
        assertThat(c.reason()).isEqualTo(CacheAwarePolicy.PREFIX_HIT);
        assertThat(view.decisions(KvCacheView.Source.KV_EVENTS)).isEqualTo(1);

        policy.dispatched(c.worker(), r); // 10 blocks not cached yet: events are expected from it
        clock.addAndGet(31 * SECOND);
        heard(ws.get(0), new KvEvent.Cleared());
        heard(ws.get(1), new KvEvent.Cleared());
        assertThat(view.freshness(ws.get(2)).label()).isEqualTo("stale");
        Choice after = policy.choose(ws, r, load);
        // ws[2]'s stale view hands over to the tree for ws[2] alone: what this gateway sent it, the whole prompt
        assertThat(after.worker()).isSameAs(ws.get(2));
        assertThat(after.reason()).isEqualTo(CacheAwarePolicy.PREFIX_HIT);
        assertThat(view.decisions(KvCacheView.Source.KV_EVENTS)).isEqualTo(2);
        assertThat(view.decisions(KvCacheView.Source.LOCAL_TREE)).isZero();
        assertThat(policy.cachedTokens(ws, r)).containsExactly(0, 0, 640);

        heard(ws.get(2), new KvEvent.Cleared()); // its cache emptied: fresh again, and its events say so
        assertThat(policy.choose(ws, r, load).reason()).isEqualTo(CacheAwarePolicy.PREFIX_MISS);
    }

    @Test
    void aWorkerThatNeverPublishedIsMatchedByTheTreeWhileTheOthersAreMatchedByTheirEvents() {
        heard(ws.get(0), new KvEvent.Cleared());
        heard(ws.get(1), new KvEvent.Stored(LongStream.rangeClosed(1, 30).toArray(), OptionalLong.empty(),
                java.util.Arrays.copyOf(ids, 480), 16)); // 30 of the prompt's 40 blocks; ws[2] never publishes
        RoutingRequest cachedAtOne = new RoutingRequest("", 640, ids); // placed there by another replica
        Choice c = policy.choose(ws, cachedAtOne, load);
        assertThat(c.worker()).as("ws[1]'s events decide for ws[1] though ws[2] has no view").isSameAs(ws.get(1));
        assertThat(c.reason()).isEqualTo(CacheAwarePolicy.PREFIX_HIT);

        RoutingRequest sentToTwo = new RoutingRequest("k".repeat(4000), 1000, IntStream.range(5_000, 6_000).toArray());
        policy.dispatched(ws.get(2), sentToTwo); // the tree remembers ws[2]
        Choice back = policy.choose(ws, sentToTwo, load);
        assertThat(back.worker()).as("ws[2] matched by what this gateway sent it").isSameAs(ws.get(2));
        assertThat(back.reason()).isEqualTo(CacheAwarePolicy.PREFIX_HIT);
        assertThat(view.decisions(KvCacheView.Source.KV_EVENTS)).isEqualTo(2);
        assertThat(view.decisions(KvCacheView.Source.LOCAL_TREE)).isZero();

        policy.choose(List.of(ws.get(2)), sentToTwo, load); // no candidate with a fresh view
        assertThat(view.decisions(KvCacheView.Source.LOCAL_TREE)).isEqualTo(1);
    }

    @Test
    void aRequestWithoutTokenIdsUsesTheTree() {
        for (Worker w : ws) {
            heard(w, new KvEvent.Cleared());
        }
        policy.choose(ws, new RoutingRequest("text", 1), load);
        assertThat(view.decisions(KvCacheView.Source.LOCAL_TREE)).isEqualTo(1);
    }
}
