package dev.sluice.gateway.cacheview;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.OptionalLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class WorkerBlocksTest {
    private static final long SECOND = 1_000_000_000L;
    private final int[] prompt = IntStream.range(100, 164).toArray(); // 4 blocks of 16

    private static KvEventBatch batch(KvEvent... events) {
        return new KvEventBatch(0, List.of(events), 0);
    }

    /** SGLang's way: one BlockStored per page, each naming the page before it. */
    private static KvEvent[] pages(int[] tokens, int from, int to, long firstHash, OptionalLong parent) {
        KvEvent[] out = new KvEvent[to - from];
        OptionalLong p = parent;
        for (int b = from; b < to; b++) {
            long h = firstHash + (b - from);
            out[b - from] = new KvEvent.Stored(new long[] {h}, p, java.util.Arrays.copyOfRange(tokens, b * 16, b * 16 + 16), 16);
            p = OptionalLong.of(h);
        }
        return out;
    }

    @Test
    void storedChainsMatchAsAPrefixAndRemovalsAndClearsTakeThemBack() {
        WorkerBlocks w = new WorkerBlocks(1_000);
        w.apply(batch(pages(prompt, 0, 3, 500, OptionalLong.empty())), 1);
        long[] keys = BlockChain.keys(prompt, 16);
        assertThat(w.blockSize()).isEqualTo(16);
        assertThat(w.matchedBlocks(keys)).isEqualTo(3);
        assertThat(w.size()).isEqualTo(3);

        int[] other = prompt.clone();
        other[20] = 7; // differs in block 1: only block 0 is shared
        assertThat(w.matchedBlocks(BlockChain.keys(other, 16))).isEqualTo(1);

        w.apply(batch(new KvEvent.Removed(new long[] {501})), 2);
        assertThat(w.matchedBlocks(keys)).as("a removed middle block ends the match").isEqualTo(1);
        w.apply(batch(new KvEvent.Cleared()), 3);
        assertThat(w.matchedBlocks(keys)).isZero();
        assertThat(w.size()).isZero();
        assertThat(w.events()).isEqualTo(5);
    }

    /**
     * A request's chain, hashed on its event loop without knowing the block size, matches what the
     * events stored at any page size: SGLang's default page of 1 and the sim's 16 alike.
     */
    @Test
    void aPromptChainMatchesEventsOfAnyPageSize() {
        long[] chain = dev.sluice.gateway.routing.PromptChain.of(prompt);
        WorkerBlocks sixteen = new WorkerBlocks(1_000);
        sixteen.apply(batch(pages(prompt, 0, 3, 500, OptionalLong.empty())), 1);
        assertThat(sixteen.matchedBlocks(chain, 16)).isEqualTo(3);
        assertThat(sixteen.matchedBlocks(chain, 16)).isEqualTo(sixteen.matchedBlocks(BlockChain.keys(prompt, 16)));

        WorkerBlocks one = new WorkerBlocks(1_000);
        KvEvent[] tokens = new KvEvent[40];
        OptionalLong parent = OptionalLong.empty();
        for (int t = 0; t < tokens.length; t++) {
            tokens[t] = new KvEvent.Stored(new long[] {900 + t}, parent, new int[] {prompt[t]}, 1);
            parent = OptionalLong.of(900 + t);
        }
        one.apply(batch(tokens), 1);
        assertThat(one.matchedBlocks(chain, 1)).isEqualTo(40);
        int[] other = prompt.clone();
        other[25] = 7;
        assertThat(one.matchedBlocks(dev.sluice.gateway.routing.PromptChain.of(other), 1)).isEqualTo(25);
    }

    @Test
    void vllmStyleManyBlocksInOneEventMatchTheSame() {
        WorkerBlocks w = new WorkerBlocks(1_000);
        w.apply(batch(new KvEvent.Stored(new long[] {1, 2, 3, 4}, OptionalLong.empty(), prompt, 16)), 1);
        assertThat(w.matchedBlocks(BlockChain.keys(prompt, 16))).isEqualTo(4);
    }

    @Test
    void aBlockWhoseParentIsUnknownIsAnOrphanNotAGuess() {
        WorkerBlocks w = new WorkerBlocks(1_000);
        w.apply(batch(pages(prompt, 1, 3, 600, OptionalLong.of(999))), 1);
        assertThat(w.orphans()).as("and so is its child").isEqualTo(2);
        assertThat(w.size()).isZero();
    }

    @Test
    void theBoundForgetsTheOldestStoredSoTheViewUnderClaims() {
        WorkerBlocks w = new WorkerBlocks(2);
        w.apply(batch(pages(prompt, 0, 3, 500, OptionalLong.empty())), 1);
        assertThat(w.size()).isEqualTo(2);
        assertThat(w.matchedBlocks(BlockChain.keys(prompt, 16))).as("block 0 forgotten: no match").isZero();
    }

    @Test
    void freshUntilWorkGoesUnansweredForStaleAfter() {
        WorkerBlocks w = new WorkerBlocks(10);
        assertThat(w.freshness(0, SECOND)).isEqualTo(WorkerBlocks.Freshness.MISSING);
        w.apply(batch(new KvEvent.Cleared()), 10 * SECOND);
        assertThat(w.freshness(100 * SECOND, SECOND)).as("idle and silent is fine").isEqualTo(WorkerBlocks.Freshness.FRESH);
        w.expectEvents(100 * SECOND);
        w.expectEvents(100 * SECOND + SECOND / 2); // the first unanswered dispatch counts
        assertThat(w.freshness(100 * SECOND + SECOND / 2, SECOND)).isEqualTo(WorkerBlocks.Freshness.FRESH);
        assertThat(w.freshness(101 * SECOND + 1, SECOND)).isEqualTo(WorkerBlocks.Freshness.STALE);
        w.apply(batch(pages(prompt, 0, 1, 1, OptionalLong.empty())), 102 * SECOND);
        assertThat(w.freshness(103 * SECOND, SECOND)).isEqualTo(WorkerBlocks.Freshness.FRESH);
    }
}
