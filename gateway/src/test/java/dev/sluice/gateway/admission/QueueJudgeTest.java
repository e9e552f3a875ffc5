package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.workers;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.AdmissionConfig.PrefillRateConfig;
import dev.sluice.gateway.routing.WorkerSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The newcomer's verdict without a walk ({@link QueueJudge#late}, when it is the last to be served)
 * is the walk's verdict: the same requests late or shed, with the same work ahead, for random
 * queues (prompts, deadlines, classes, non-streamed answers) that a review has left with nobody late.
 */
class QueueJudgeTest {
    private static final long NOW = 1_000_000_000L;

    private static List<String> verdict(List<Forecast.Late> late) {
        List<String> out = new ArrayList<>();
        for (Forecast.Late l : late) {
            out.add(l.ticket().id() + (l.shed() ? " shed" : " late") + " ahead=" + Math.round(l.tokensAhead()));
        }
        return out;
    }

    @Test
    void theIndexedVerdictIsTheWalksForANewcomerAtTheEnd() {
        WorkerSet workers = workers(2, 1);
        PrefillRates rates = new PrefillRates(workers, new PrefillRateConfig(OptionalDouble.of(1_000), Map.of(), false,
                Optional.empty()), 8_000, Map.of());
        PrefillLedger ledger = new PrefillLedger(rates);
        ledger.pace.observed(1.28, 128); // 10 ms a token, for the non-streamed
        QueueJudge judge = new QueueJudge(rates, ledger, AdmissionObserver.NONE);
        Random random = new Random(42);
        int fast = 0;
        int checked = 0;
        for (int round = 0; round < 300; round++) {
            boolean edf = random.nextBoolean();
            boolean shedLongest = random.nextBoolean();
            int classes = 1 + random.nextInt(3);
            PriorityQueues queue = new PriorityQueues(classes, 30_000_000_000L, edf);
            int n = random.nextInt(40);
            for (int i = 0; i <= n; i++) {
                long tokens = 50 + random.nextInt(3_000);
                long deadline = random.nextInt(4) == 0 ? Long.MAX_VALUE
                        : NOW + (long) ((1 + random.nextInt(60)) * 1e9);
                Ticket t = new Ticket("t" + i, tokens, random.nextInt(classes), "tenant", deadline, Runnable::run,
                        new AdmissionFixtures.Recorder());
                if (random.nextInt(5) == 0) {
                    t.wholeAnswer(random.nextInt(500));
                }
                t.enqueuedNanos = NOW;
                t.state = Ticket.State.QUEUED;
                queue.add(t);
                if (i == n) { // the newcomer: judged both ways
                    List<String> walked = verdict(judge.forecast(NOW).newcomer(t, judge.doorSpread())
                            .late(queue.serviceOrder(), shedLongest));
                    List<String> judged = verdict(judge.late(queue, t, shedLongest, NOW));
                    assertThat(judged).as("round %d, %d queued, edf %s, shed longest %s", round, n, edf, shedLongest)
                            .isEqualTo(walked);
                    checked++;
                    fast += queue.isLast(t) ? 1 : 0;
                    break;
                }
                // the queue as a review leaves it: nobody predicted late
                for (Forecast.Late l : judge.forecast(NOW).late(queue.serviceOrder(), shedLongest)) {
                    queue.remove(l.ticket());
                }
            }
        }
        assertThat(checked).isEqualTo(300);
        assertThat(fast).as("the indexed path was taken").isGreaterThan(60);
    }
}
