package dev.sluice.gateway.cacheview;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
 * The KV view at its memory budget under a sustained stream of stores (SGLang's page-of-one form:
 * every block a new prefix, the view's worst case): its own accounting never passes the budget,
 * and, measured on the heap after a GC, it grows by no more than the budget plus slack. Without the
 * budget the same stream would take several times it.
 */
class KvViewMemoryBudgetTest {
    private static final long BUDGET = 16L << 20;
    private static final long SLACK = 8L << 20;

    @Test
    void theViewStaysWithinItsBudgetUnderASustainedStream() {
        List<Worker> workers = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            workers.add(new Worker(WorkerRole.PREFILL, new WorkerEndpoint("http://10.0.0." + i + ":30000", "10.0.0." + i,
                    30000, null)));
        }
        long before = heapAfterGc();
        CacheView view = new CacheView(List.of(), 1L << 20, BUDGET, 30_000_000_000L, System::nanoTime);
        for (Worker w : workers) {
            view.add(w, 2); // 8 worker-ranks share 16 MiB
        }
        int limit = view.of(workers.get(0)).orElseThrow().limit();
        assertThat(limit).as("the budget, not max_blocks_per_worker, bounds each rank").isLessThan(1 << 20);
        long stored = 0;
        long hash = 1;
        for (int round = 0; round < 6; round++) {
            for (Worker w : workers) {
                WorkerBlocks b = view.of(w).orElseThrow();
                for (int rank = 0; rank < 2; rank++) {
                    // one chain per batch, each block continuing the one before: distinct prefixes all along
                    KvEvent[] pages = new KvEvent[limit / 2];
                    OptionalLong parent = OptionalLong.empty();
                    for (int i = 0; i < pages.length; i++) {
                        pages[i] = new KvEvent.Stored(new long[] {hash}, parent, new int[] {(int) hash}, 1);
                        parent = OptionalLong.of(hash++);
                    }
                    b.apply(rank, new KvEventBatch(0, List.of(pages), rank), 1);
                    stored += pages.length;
                    assertThat(view.bytes()).isLessThanOrEqualTo(BUDGET);
                }
            }
        }
        long held = workers.stream().mapToLong(w -> view.of(w).orElseThrow().size()).sum();
        assertThat(stored).as("the stream stored 3x what the budget holds").isGreaterThan(2 * held);
        assertThat(held).as("and the view is full").isGreaterThan(8L * limit * 9 / 10);
        long grown = heapAfterGc() - before;
        assertThat(grown).as("heap grown by the view").isLessThanOrEqualTo(BUDGET + SLACK);
        System.out.printf("kv view: %d blocks held, %d bytes accounted (%.1f B/block), heap grown %d (%.1f B/block), "
                + "budget %d%n", held, view.bytes(), (double) view.bytes() / held, grown, (double) grown / held, BUDGET);
        assertThat(view.match(List.of(workers.get(0)), new long[0])).containsExactly(0); // keeps the view reachable
    }

    /** Bytes a block takes in the boxed maps the view used before (LinkedHashMap + ConcurrentHashMap), for the docs. */
    @Test
    void bytesABlockTookInBoxedMaps() {
        int n = 200_000;
        long before = heapAfterGc();
        java.util.LinkedHashMap<Long, Long> engine = new java.util.LinkedHashMap<>(1024);
        java.util.concurrent.ConcurrentHashMap<Long, Integer> keys = new java.util.concurrent.ConcurrentHashMap<>();
        for (long i = 0; i < n; i++) {
            long state = i * 0x9E3779B97F4A7C15L;
            engine.put(i * 31 + 1_000_000, state);
            keys.merge(state ^ 0x5555L, 1, Integer::sum);
        }
        long grown = heapAfterGc() - before;
        System.out.printf("boxed maps: %.1f B/block%n", (double) grown / n);
        assertThat(engine.size() + keys.size()).isEqualTo(2 * n);
        assertThat((double) grown / n).isGreaterThan(2.0 * WorkerBlocks.bytesFor(1, n) / n);
    }

    private static long heapAfterGc() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
