package dev.sluice.testbed.load.offline;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.testbed.load.offline.OfflineSchedule.Method;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The offline scheduler's claims, each checked against brute force or hand reasoning. */
class OfflineSchedulerTest {

    @Test
    void branchAndBoundAndTheSchedulerFindTheBruteForceOptimum() {
        Random random = new Random(19);
        int greedyShort = 0;
        for (int round = 0; round < 400; round++) {
            List<OfflineJob> jobs = Instances.random(random, 1 + random.nextInt(8));
            int optimum = BruteForce.optimum(jobs);
            BranchAndBound.Result search = BranchAndBound.solve(jobs, new int[0], Long.MAX_VALUE);
            assertThat(search.complete()).isTrue();
            assertThat(search.best().length).as("round %d", round).isEqualTo(optimum);
            assertFeasible(jobs, search.best());
            OfflineSchedule s = OfflineScheduler.schedule(jobs);
            assertThat(s.good()).as("round %d", round).isEqualTo(optimum);
            assertThat(s.method()).isNotEqualTo(Method.HEURISTIC);
            assertThat(s.upperBound()).isEqualTo(optimum);
            if (GreedyRules.dispatch(jobs, Comparator.comparingDouble(OfflineJob::releaseMs)).length < optimum) {
                greedyShort++;
            }
        }
        // the instances are hard enough that FCFS-with-drops is often wrong: the check has teeth
        assertThat(greedyShort).isGreaterThan(40);
    }

    @Test
    void theGreedyIsOptimalForEqualSizesAndAgreeableDeadlines() {
        Random random = new Random(7);
        for (int round = 0; round < 400; round++) {
            List<OfflineJob> jobs = Instances.equalSizeAgreeable(random, 1 + random.nextInt(8));
            assertThat(EqualSizeGreedy.applies(jobs)).isTrue();
            int[] greedy = EqualSizeGreedy.schedule(jobs);
            assertFeasible(jobs, greedy);
            assertThat(greedy.length).as("round %d %s", round, jobs).isEqualTo(BruteForce.optimum(jobs));
        }
    }

    @Test
    void theGreedyIsNotOptimalWithoutItsHypothesesAndIsNotUsedThen() {
        // unequal sizes, agreeable: starting the long job at once blocks two short ones
        List<OfflineJob> sizes = List.of(new OfflineJob(0, null, 0, 10, 12), new OfflineJob(1, null, 1, 3, 12),
                new OfflineJob(2, null, 2, 3, 12));
        assertThat(EqualSizeGreedy.applies(sizes)).isFalse();
        assertThat(EqualSizeGreedy.schedule(sizes)).hasSize(1);
        assertThat(BruteForce.optimum(sizes)).isEqualTo(2);
        assertThat(OfflineScheduler.schedule(sizes).good()).isEqualTo(2);
        // equal sizes, deadlines not agreeable: a patient job started now blocks an urgent later one
        List<OfflineJob> order = List.of(new OfflineJob(0, null, 0, 10, 100), new OfflineJob(1, null, 1, 10, 11));
        assertThat(EqualSizeGreedy.applies(order)).isFalse();
        assertThat(EqualSizeGreedy.schedule(order)).hasSize(1);
        assertThat(BruteForce.optimum(order)).isEqualTo(2);
        assertThat(OfflineScheduler.schedule(order).good()).isEqualTo(2);
    }

    @Test
    void theBoundsAreNeverBelowTheOptimumAndOftenMeetIt() {
        Random random = new Random(3);
        int tight = 0;
        int belowJobCount = 0;
        for (int round = 0; round < 400; round++) {
            List<OfflineJob> jobs = Instances.random(random, 2 + random.nextInt(7));
            int optimum = BruteForce.optimum(jobs);
            int interval = IntervalBound.of(jobs);
            assertThat(interval).as("round %d", round).isGreaterThanOrEqualTo(optimum);
            tight += interval == optimum ? 1 : 0;
            belowJobCount += interval < jobs.size() ? 1 : 0;
            // a search stopped early still gives a valid bound, and its best is feasible
            BranchAndBound.Result cut = BranchAndBound.solve(jobs, new int[0], 3);
            assertThat(cut.bound()).as("round %d", round).isGreaterThanOrEqualTo(optimum);
            assertThat(cut.best().length).isLessThanOrEqualTo(optimum);
            assertFeasible(jobs, cut.best());
            OfflineSchedule capped = OfflineScheduler.schedule(jobs, 3);
            assertThat(capped.upperBound()).isGreaterThanOrEqualTo(optimum);
            assertThat(capped.good()).isLessThanOrEqualTo(optimum);
        }
        assertThat(belowJobCount).isGreaterThan(200); // not the trivial bound n
        assertThat(tight).isGreaterThan(200);
    }

    @Test
    void theHeuristicBeatsEveryGreedyRuleAndStaysUnderTheBound() {
        Random random = new Random(11);
        for (int round = 0; round < 30; round++) {
            List<OfflineJob> jobs = Instances.random(random, 15 + random.nextInt(25));
            int[] heuristic = OfflineScheduler.heuristic(jobs);
            assertFeasible(jobs, heuristic);
            for (Map.Entry<String, int[]> rule : GreedyRules.all(jobs).entrySet()) {
                assertFeasible(jobs, rule.getValue());
                assertThat(heuristic.length).as("%s, round %d", rule.getKey(), round)
                        .isGreaterThanOrEqualTo(rule.getValue().length);
            }
            assertThat(heuristic.length).isLessThanOrEqualTo(IntervalBound.of(jobs));
            OfflineSchedule s = OfflineScheduler.schedule(jobs);
            assertThat(s.good()).isGreaterThanOrEqualTo(heuristic.length).isLessThanOrEqualTo(s.upperBound());
        }
    }

    @Test
    void theIncidentBurstGetsSixOnTime() {
        // 20 x 11,000 tokens at t = 0, 2,500 tokens/s (4.4 s each), first token within 30 s, 50 ms overhead:
        // six prefills end by 26.4 s (+50 ms), a seventh would end at 30.8 s
        List<OfflineJob> burst = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            burst.add(new OfflineJob(i, null, 0, 4400, 30_000 - 50));
        }
        OfflineSchedule s = OfflineScheduler.schedule(burst);
        assertThat(s.good()).isEqualTo(6);
        assertThat(s.upperBound()).isEqualTo(6);
        assertThat(s.method()).isEqualTo(Method.GREEDY_OPTIMAL);
        assertThat(s.slots().get(5).startMs()).isEqualTo(22_000);
    }

    @Test
    void theIncidentBurstWithATailMatchesHandReasoning() {
        // tail requests sent at 10, 20, 40 and 100 s. The burst fits six by 29.95 s, whatever else runs;
        // each tail request fits too: after the six, the one sent at 10 s runs 26.4-30.8 s (due 35.55 s),
        // the one at 20 s 30.8-35.2 s, the others alone. 6 + 4 = 10, and neither part can do better.
        List<OfflineJob> jobs = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            jobs.add(new OfflineJob(i, "burst", 0, 4400, 29_950));
        }
        double[] tail = {10_000, 20_000, 40_000, 100_000};
        for (int i = 0; i < tail.length; i++) {
            jobs.add(new OfflineJob(20 + i, "tail", tail[i], 4400, tail[i] + 29_950));
        }
        OfflineSchedule s = OfflineScheduler.schedule(jobs);
        assertThat(s.good()).isEqualTo(10);
        assertThat(s.method()).isEqualTo(Method.GREEDY_OPTIMAL);
        assertThat(s.slots().stream().filter(x -> x.job().requestClass().equals("tail")).count()).isEqualTo(4);
        assertThat(s.blocks()).hasSize(2); // the request at 100 s is alone
    }

    @Test
    void aJitteredBurstFitsItsShortestPrompts() {
        // all sent at once with one deadline: the most that fit are the shortest ones (any on-time set
        // can be swapped for the same number of shortest), so the answer is a prefix sum
        Random random = new Random(5);
        for (int round = 0; round < 20; round++) {
            List<OfflineJob> jobs = Instances.bench(random, 20, 1e-9, 0, 11_000, 0.1, 30_000);
            double[] sizes = jobs.stream().mapToDouble(OfflineJob::prefillMs).sorted().toArray();
            int expected = 0;
            double sum = 0;
            while (expected < sizes.length && sum + sizes[expected] <= 29_950) {
                sum += sizes[expected++];
            }
            OfflineSchedule s = OfflineScheduler.schedule(jobs);
            assertThat(s.good()).as("round %d", round).isEqualTo(expected);
            assertThat(s.optimal()).isTrue();
        }
    }

    @Test
    void onEqualSizesTheGreedyAgreesWithBranchAndBoundOnBenchShapedRuns() {
        Random random = new Random(23);
        for (int round = 0; round < 5; round++) {
            List<OfflineJob> jobs = Instances.bench(random, 20, 0.15, 120, 11_000, 0, 30_000);
            assertThat(EqualSizeGreedy.applies(jobs)).isTrue();
            int greedy = EqualSizeGreedy.schedule(jobs).length;
            int[] start = OfflineScheduler.heuristic(jobs);
            BranchAndBound.Result search = BranchAndBound.solve(jobs, start, 2_000_000);
            assertThat(search.best().length).isLessThanOrEqualTo(greedy);
            assertThat(search.bound()).isGreaterThanOrEqualTo(greedy);
            if (search.complete()) {
                assertThat(search.best().length).isEqualTo(greedy);
            }
        }
    }

    @Test
    void benchSizedRunsFinishQuicklyWithAFeasibleScheduleUnderItsBound() {
        Random random = new Random(29);
        for (int round = 0; round < 4; round++) {
            List<OfflineJob> jobs = Instances.bench(random, 20 + 10 * round, 0.3, 150, 11_000, 0.1, 30_000);
            long t0 = System.nanoTime();
            OfflineSchedule s = OfflineScheduler.schedule(jobs);
            double seconds = (System.nanoTime() - t0) / 1e9;
            assertThat(seconds).as("%d jobs", jobs.size()).isLessThan(30); // generous: only a real fault breaks it
            assertThat(s.good()).isLessThanOrEqualTo(s.upperBound());
            assertThat(s.good()).isGreaterThanOrEqualTo(OfflineScheduler.heuristic(jobs).length);
        }
    }

    private static void assertFeasible(List<OfflineJob> jobs, int[] seq) {
        assertThat(seq).doesNotHaveDuplicates();
        double free = 0;
        for (int i : seq) {
            OfflineJob j = jobs.get(i);
            double start = Math.max(free, j.releaseMs());
            assertThat(j.onTimeIfStartedAt(start)).isTrue();
            free = start + j.prefillMs();
        }
    }

}
