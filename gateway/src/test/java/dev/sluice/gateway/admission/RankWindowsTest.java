package dev.sluice.gateway.admission;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.routing.RankChoice;
import dev.sluice.gateway.routing.RankPlan;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerTelemetry;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Each rank holds its share of the worker's window; requests go to the least loaded rank. */
class RankWindowsTest {
    private static final long STALE = 5_000_000_000L;
    private static final long[] NO_BLOCKS = new long[0];
    private static final int[] NO_RANKS = new int[0];
    private final RankWindows ranks = new RankWindows(STALE);

    private static Worker worker(WorkerRole role, int dp) {
        Worker w = new Worker(role, new WorkerEndpoint("http://10.0.0.1:30000", "10.0.0.1", 30000, null));
        w.rankPlan(new RankPlan(dp, "test"));
        return w;
    }

    @Test
    void streamsSpreadOverRanksAndEachRankStopsAtItsShare() {
        Worker d = worker(WorkerRole.UNIFIED, 4);
        RankWindows.Caps caps = new RankWindows.Caps(100, 1 << 20, 6); // 6 streams: 2 per rank (rounded up)
        int[] count = new int[4];
        for (int i = 0; i < 8; i++) {
            RankChoice c = ranks.dispatched(d, d, 10, NO_BLOCKS, NO_RANKS, caps, caps);
            assertThat(c.prefillRank()).isEqualTo(c.decodeRank());
            count[c.decodeRank()]++;
            int max = java.util.Arrays.stream(count).max().getAsInt();
            int min = java.util.Arrays.stream(count).min().getAsInt();
            assertThat(max - min).as("spread after %d", i + 1).isLessThanOrEqualTo(1);
        }
        assertThat(ranks.pick(d, new RankWindows.Need(true, true, 10), caps)).isEqualTo(RankWindows.NO_ROOM);
        ranks.streamEnded(d, 2);
        ranks.prefillDone(d, 2, 10);
        assertThat(ranks.pick(d, new RankWindows.Need(true, true, 10), caps)).as("the freed rank").isEqualTo(2);
        assertThat(ranks.snapshot(d, false)).containsExactly(2, 2, 1, 2);
    }

    @Test
    void prefillRanksBalanceTokensAndEqualRanksGoToTheOneReportingFewerRequests() {
        Worker p = worker(WorkerRole.PREFILL, 2);
        Worker d = worker(WorkerRole.DECODE, 2);
        p.telemetry(new WorkerTelemetry(System.nanoTime(), true, Map.of(), List.of(5.0, 1.0)));
        RankWindows.Caps caps = new RankWindows.Caps(8, 1000, 100); // per rank: 4 requests, 500 tokens
        RankChoice first = ranks.dispatched(p, d, 400, NO_BLOCKS, NO_RANKS, caps, caps);
        assertThat(first.prefillRank()).as("rank 1 reports fewer of others' requests").isEqualTo(1);
        assertThat(first.prefillRanks()).isEqualTo(2);
        assertThat(ranks.dispatched(p, d, 100, NO_BLOCKS, NO_RANKS, caps, caps).prefillRank()).isZero();
        assertThat(ranks.dispatched(p, d, 100, NO_BLOCKS, NO_RANKS, caps, caps).prefillRank()).as("fewer tokens").isZero();
        // rank 0: 200 of its 500 tokens; rank 1: 400: a 200-token prompt fits rank 0 only
        assertThat(ranks.pick(p, new RankWindows.Need(true, false, 200), caps)).isZero();
        assertThat(ranks.pick(p, new RankWindows.Need(true, false, 400), caps)).isEqualTo(RankWindows.NO_ROOM);
    }

    @Test
    void aWorkerRoutedWholeGetsNoRankAndAResizeKeepsWhatTheKeptRanksHold() {
        Worker whole = worker(WorkerRole.DECODE, 1);
        RankWindows.Caps caps = new RankWindows.Caps(4, 1000, 100);
        assertThat(ranks.dispatched(whole, whole, 1, NO_BLOCKS, NO_RANKS, caps, caps)).isEqualTo(RankChoice.NONE);
        Worker d = worker(WorkerRole.DECODE, 4);
        Worker p = worker(WorkerRole.PREFILL, 1);
        for (int i = 0; i < 4; i++) {
            assertThat(ranks.dispatched(p, d, 1, NO_BLOCKS, NO_RANKS, caps, caps).decodeRank()).isEqualTo(i);
        }
        d.rankPlan(new RankPlan(2, "restarted with dp_size 2"));
        ranks.streamEnded(d, 3); // a rank that is gone: dropped
        assertThat(ranks.snapshot(d, false)).containsExactly(1, 1);
    }

    @Test
    void aPrefillRankThatComputedAPrefixGetsItsNextTurnsWhileItHasRoom() {
        Worker p = worker(WorkerRole.PREFILL, 4);
        Worker d = worker(WorkerRole.DECODE, 4);
        RankWindows.Caps caps = new RankWindows.Caps(8, 1 << 20, 100); // 2 requests a rank
        String system = "s".repeat(2048);
        long[] turn1 = RankAffinity.blocks(system + "user: hello");
        long[] turn2 = RankAffinity.blocks(system + "user: hello, assistant: hi; user: and then?" + "x".repeat(300));
        assertThat(turn2.length).isGreaterThan(turn1.length);
        assertThat(turn2[turn1.length - 1]).as("a prefix's blocks hash alike").isEqualTo(turn1[turn1.length - 1]);
        int first = ranks.dispatched(p, d, 500, turn1, NO_RANKS, caps, caps).prefillRank();
        ranks.dispatched(p, d, 500, RankAffinity.blocks("o".repeat(2048)), NO_RANKS, caps, caps); // another prompt, elsewhere
        assertThat(ranks.dispatched(p, d, 500, turn2, NO_RANKS, caps, caps).prefillRank()).as("back where its prefix is")
                .isEqualTo(first);
        // that rank is full now (2 of 2): the next turn goes to a rank with room, and is remembered there
        int moved = ranks.dispatched(p, d, 500, RankAffinity.blocks(system + "another user"), NO_RANKS, caps, caps).prefillRank();
        assertThat(moved).isNotEqualTo(first);
        ranks.prefillDone(p, first, 500);
        assertThat(ranks.pick(p, new RankWindows.Need(true, false, 500), caps, RankAffinity.blocks(system + "x"), NO_RANKS))
                .as("the system prompt's blocks were last sent to the new rank").isEqualTo(moved);
        assertThat(RankAffinity.blocks("short")).isEmpty();
    }

    @Test
    void aPrefillGoesToTheRankWhoseOwnEventsHoldItsPrefixOverTheGatewaysOwnSends() {
        Worker p = worker(WorkerRole.PREFILL, 4);
        Worker d = worker(WorkerRole.DECODE, 4);
        RankWindows.Caps caps = new RankWindows.Caps(8, 1 << 20, 100); // 2 requests a rank
        long[] prompt = RankAffinity.blocks("s".repeat(2048) + "user: hi");
        int sent = ranks.dispatched(p, d, 500, prompt, NO_RANKS, caps, caps).prefillRank();
        ranks.prefillDone(p, sent, 500);
        int other = (sent + 2) % 4;
        int[] events = new int[4];
        events[other] = 512; // another client (or replica) computed it there: the rank's own events say so
        events[(sent + 1) % 4] = 256;
        assertThat(ranks.dispatched(p, d, 500, prompt, events, caps, caps).prefillRank())
                .as("the longest prefix by the ranks' events, not the rank this gateway last sent it to")
                .isEqualTo(other);
        assertThat(ranks.dispatched(p, d, 500, prompt, events, caps, caps).prefillRank()).isEqualTo(other);
        assertThat(ranks.dispatched(p, d, 500, prompt, events, caps, caps).prefillRank())
                .as("that rank is full (2 of 2): the next longest").isEqualTo((sent + 1) % 4);
        assertThat(ranks.pick(p, new RankWindows.Need(true, false, 500), caps, prompt, new int[4]))
                .as("no rank's events show it: the gateway's own sends decide").isEqualTo((sent + 1) % 4);
    }
}
