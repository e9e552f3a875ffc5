package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.config;
import static dev.sluice.gateway.admission.AdmissionFixtures.workers;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionFixtures.Recorder;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.PrefillRateConfig;
import dev.sluice.gateway.config.AdmissionConfig.QueueOrder;
import dev.sluice.gateway.config.AdmissionConfig.SchedulingConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerTelemetry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Issue 19: predictions from the first request (priors), a review of the waiting queue that answers
 * what can no longer make its deadline as soon as that is known, and earliest-deadline-first
 * within a class. The incident's shape on a fake clock: one prefill worker at 2,500 prompt
 * tokens/s, 11,000-token prompts (4.4 s each), 30 s to the first token.
 */
class PredictiveAdmissionTest {
    private static final long PROMPT = 11_000;
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final WorkerSet workers = workers(1, 1);

    /** The defaults of admission: (queue 32, budget 131,072, windows 4 requests / 32,768 tokens), 30 s. */
    private static AdmissionConfig incident(PrefillRateConfig rate, QueueOrder order) {
        return config(32, 131_072, Duration.ofSeconds(30), 131_072, 4, 32_768, 256).toBuilder()
                .initialPrefillTokensPerSecond(8_000)
                .prefillRate(rate)
                .scheduling(new SchedulingConfig(order, Duration.ofMillis(200)))
                .build();
    }

    private static PrefillRateConfig prior(double tokensPerSecond) {
        return new PrefillRateConfig(OptionalDouble.of(tokensPerSecond), Map.of(), false, Optional.empty());
    }

    private static final PrefillRateConfig NO_PRIOR = new PrefillRateConfig(OptionalDouble.empty(), Map.of(), false,
            Optional.empty());

    private AdmissionController controller(AdmissionConfig cfg) {
        return new AdmissionController(cfg, workers, AdmissionObserver.NONE, now::get);
    }

    private Ticket ticket(String id, long tokens, int priority, Recorder r) {
        return new Ticket(id, tokens, priority, "t", Long.MAX_VALUE, Runnable::run, r);
    }

    private void advance(double seconds) {
        now.addAndGet((long) (seconds * 1e9));
    }

    /** Submits a burst; returns the recorders, and the immediate rejections in {@code rejected}. */
    private List<Recorder> burst(AdmissionController c, int n, List<Rejection> rejected) {
        List<Recorder> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Recorder r = new Recorder();
            out.add(r);
            Ticket t = ticket("b" + i, PROMPT, 1, r);
            tickets.put(r, t);
            Rejection no = c.submit(t);
            if (no != null) {
                rejected.add(no);
            }
        }
        return out;
    }

    @Test
    void withAPriorTheBurstIsCutAtWhatTheDeadlineAllowsAtOnce() {
        AdmissionController c = controller(incident(prior(2_500), QueueOrder.EDF));
        assertThat(c.snapshot().throughputMeasured()).as("a configured prior is trusted").isTrue();
        List<Rejection> rejected = new ArrayList<>();
        burst(c, 20, rejected);

        // 6 x 4.4 s = 26.4 s fits in 30 s, the 7th (30.8 s) does not: 14 refused at arrival, not after waiting
        assertThat(rejected).hasSize(14).allMatch(r -> r.reason() == RejectReason.DEADLINE_UNREACHABLE);
        AdmissionSnapshot s = c.snapshot();
        assertThat(s.queued() + s.dispatched()).isEqualTo(6);
        assertThat(s.prefillRates().values()).singleElement()
                .satisfies(r -> assertThat(r.source()).isEqualTo("configured"));
        // the first refusal's Retry-After is the predicted wait, about 30.8 s (33 s with the door's margin
        // for the rate's uncertainty, 4 % of the prefill ahead, and the 1 s slack)
        assertThat(rejected.get(0).retryAfterSeconds()).isBetween(30L, 34L);
    }

    @Test
    void whenTheFirstPrefillShowsTheRateTheQueuedThatCannotMakeItAreAnsweredAtOnceAndStopCountingAhead() {
        AdmissionController c = controller(incident(NO_PRIOR, QueueOrder.EDF));
        assertThat(c.snapshot().throughputMeasured()).as("the guess is not trusted").isFalse();
        List<Rejection> atArrival = new ArrayList<>();
        List<Recorder> burst = burst(c, 20, atArrival);
        // without a trusted rate only the token budget (131,072 = 11 prompts) refuses
        assertThat(atArrival).hasSize(9).allMatch(r -> r.reason() == RejectReason.TOKEN_BUDGET_EXCEEDED);
        c.expire();
        assertThat(burst.stream().filter(r -> r.rejection != null)).as("nothing judged on a guess").isEmpty();

        // 4.4 s in, the first prefill completes; its interval also holds the handoff's overhead and the
        // worker stays busy: no sample yet
        advance(4.4);
        Ticket first = tickets.get(burst.get(0));
        c.prefillDone(first);
        c.expire();
        assertThat(c.snapshot().throughputMeasured()).isFalse();
        assertThat(burst.stream().filter(r -> r.rejection != null)).isEmpty();
        // 8.8 s: the second, its prefill alone: 2,500 tokens/s measured
        advance(4.4);
        Ticket second = tickets.get(burst.get(1));
        c.prefillDone(second);
        assertThat(c.snapshot().prefillTokensPerSecond()).isEqualTo(2_500.0);
        c.expire(); // the next sweep (every 20 ms on the control loop)

        // in prefill or queued: #3 (due 13.2 s), #4 (17.6), #5 (22.0), #6 (26.4) make it; #7..#11 cannot
        List<Recorder> answered = burst.subList(0, 11).stream().filter(r -> r.rejection != null).toList();
        assertThat(answered).hasSize(5).allMatch(r -> r.rejection.reason() == RejectReason.DEADLINE_UNREACHABLE);
        assertThat(burst.subList(6, 11)).allMatch(r -> r.rejection != null);
        assertThat(burst.subList(0, 6)).allMatch(r -> r.rejection == null);

        // an arrival at 13.5 s (first token due by 43.5 s) no longer sees the dropped five ahead of it
        advance(13.5 - 8.8);
        Recorder late = new Recorder();
        assertThat(c.submit(ticket("late", PROMPT, 1, late))).isNull();
        c.release(first);
        c.release(second);
    }

    @Test
    void prefillsThatFinishLaterThanPredictedLeaveThatMuchMarginInTheChecks() {
        AdmissionConfig oneAtATime = config(32, 131_072, Duration.ofSeconds(30), 131_072, 1, 32_768, 256).toBuilder()
                .prefillRate(prior(2_500)).build();
        AdmissionController c = controller(oneAtATime);
        assertThat(c.snapshot().predictionSlackSeconds()).as("nothing seen yet").isEqualTo(1.0);
        // each first token comes a second after its prefill was predicted done (the handoff and the
        // first decode step, say, that no rate counts), one request at a time with idle time between
        for (int i = 0; i < 4; i++) {
            Recorder r = new Recorder();
            Ticket t = ticket("late" + i, 4_000, 1, r);
            assertThat(c.submit(t)).isNull();
            assertThat(r.granted()).isTrue();
            advance(c.snapshot().prefillTokensPerSecond() > 0 ? 4_000 / c.snapshot().prefillTokensPerSecond() + 1.0 : 0);
            c.prefillDone(t);
            c.release(t);
            advance(5);
        }
        AdmissionSnapshot s = c.snapshot();
        double rate = s.prefillTokensPerSecond();
        double slack = s.predictionSlackSeconds();
        assertThat(slack).as("the lateness the rate did not absorb").isGreaterThan(0.3);

        // a prompt whose prefill alone fits the 30 s deadline, but not with the margin
        long tight = (long) ((30 - slack / 2) * rate);
        Rejection no = c.submit(ticket("tight", tight, 1, new Recorder()));
        assertThat(no).isNotNull();
        assertThat(no.reason()).isEqualTo(RejectReason.DEADLINE_UNREACHABLE);
        // the door's margin grows with the prefill ahead, by the rate's spread (here wide: the prior was off)
        Ticket easy = ticket("easy", (long) ((30 - slack - 0.5) / (1 + s.doorMarginPerSecond()) * rate), 1,
                new Recorder());
        assertThat(c.submit(easy)).isNull();
        c.prefillDone(easy);
        c.release(easy);
        assertThat(c.snapshot().idle()).isTrue();
    }

    /** Each burst ticket by its recorder. */
    private final Map<Recorder, Ticket> tickets = new java.util.IdentityHashMap<>();

    @Test
    void workInPrefillIsCountedWithItsProgressNotAsDispatched() {
        AdmissionController c = controller(config(8, 1_000_000, Duration.ofSeconds(60), 100_000, 1, 100_000, 10)
                .toBuilder().prefillRate(prior(1_000)).build());
        Recorder running = new Recorder();
        c.submit(ticket("running", 10_000, 1, running)); // 10 s of prefill, dispatched at once
        assertThat(running.granted()).isTrue();
        advance(9);
        // 1,000 tokens of it are left: 1 s, then its own 1,000 tokens: 2 s, + 4 % margin + 1 s slack < 3.2 s
        Rejection r = c.submit(new Ticket("x", 1_000, 1, "t", now.get() + Duration.ofMillis(3_200).toNanos(),
                Runnable::run, new Recorder()));
        assertThat(r).isNull();
        // 0.5 s: cannot be met
        Rejection no = c.submit(new Ticket("y", 1_000, 1, "t", now.get() + Duration.ofMillis(500).toNanos(),
                Runnable::run, new Recorder()));
        assertThat(no.reason()).isEqualTo(RejectReason.DEADLINE_UNREACHABLE);
    }

    @Test
    void earliestDeadlineFirstWithinAClassAndArrivalOrderWithFifo() {
        for (QueueOrder order : QueueOrder.values()) {
            AdmissionController c = controller(config(8, 1_000_000, Duration.ofSeconds(60), 100_000, 1, 100_000, 10)
                    .toBuilder().scheduling(new SchedulingConfig(order, Duration.ofMillis(200))).build());
            Recorder blocker = new Recorder();
            Ticket first = ticket("first", 1_000, 1, blocker);
            c.submit(first);
            Recorder relaxed = new Recorder();
            Recorder urgent = new Recorder();
            c.submit(new Ticket("relaxed", 1_000, 1, "t", now.get() + Duration.ofSeconds(50).toNanos(), Runnable::run,
                    relaxed));
            c.submit(new Ticket("urgent", 1_000, 1, "t", now.get() + Duration.ofSeconds(10).toNanos(), Runnable::run,
                    urgent));
            advance(0.5);
            c.prefillDone(first);
            assertThat(order == QueueOrder.EDF ? urgent.granted() : relaxed.granted()).as(order.name()).isTrue();
            assertThat(order == QueueOrder.EDF ? relaxed.granted() : urgent.granted()).as(order.name()).isFalse();
        }
    }

    @Test
    void aHigherClassArrivalThatPushesAQueuedRequestPastItsDeadlineGetsItAnsweredAtOnce() {
        AdmissionController c = controller(config(8, 1_000_000, Duration.ofSeconds(60), 100_000, 1, 100_000, 10)
                .toBuilder().prefillRate(prior(1_000)).build());
        c.submit(ticket("running", 5_000, 1, new Recorder())); // 5 s
        Recorder normal = new Recorder();
        // 5 s + its 2 s = 7 s (8.3 s with the door's margin and the slack), deadline 8.5 s: fits
        assertThat(c.submit(new Ticket("normal", 2_000, 1, "t", now.get() + Duration.ofMillis(8_500).toNanos(),
                Runnable::run, normal))).isNull();
        // a high-class 3 s request goes first: the normal one would now come at 10 s; it is told now, not
        // at its deadline, and stops counting as work ahead
        assertThat(c.submit(ticket("high", 3_000, 0, new Recorder()))).isNull();
        assertThat(normal.rejection.reason()).isEqualTo(RejectReason.DEADLINE_UNREACHABLE);
        assertThat(normal.rejection.message()).contains("waited 0 ms in the queue");
        assertThat(c.snapshot().queued()).isEqualTo(1);
        c.expire();
        assertThat(c.snapshot().queued()).isEqualTo(1);
    }

    @Test
    void aWorkersOwnTelemetryIsAPriorAndAMeasurementReplacesIt() {
        AdmissionController c = controller(config(8, 1_000_000, Duration.ofSeconds(60), 100_000, 1, 100_000, 10)
                .toBuilder().prefillRate(new PrefillRateConfig(OptionalDouble.empty(), Map.of(), true,
                        Optional.empty())).build());
        Worker prefill = workers.prefill().get(0);
        assertThat(c.snapshot().throughputMeasured()).isFalse();
        prefill.telemetry(new WorkerTelemetry(System.nanoTime(), true,
                Map.of(WorkerTelemetry.Field.PREFILL_COMPUTE_RATE, 3_000.0)));
        AdmissionSnapshot s = c.snapshot();
        assertThat(s.throughputMeasured()).isTrue();
        assertThat(s.prefillRates().get(prefill).source()).isEqualTo("telemetry");
        assertThat(s.prefillTokensPerSecond()).isEqualTo(3_000.0);

        Ticket cold = ticket("cold", 10_000, 1, new Recorder());
        c.submit(cold);
        advance(5);
        c.prefillDone(cold);
        c.release(cold);
        assertThat(c.snapshot().prefillRates().get(prefill).source()).as("a cold start is no sample").isEqualTo("telemetry");
        Recorder r = new Recorder();
        Ticket t = ticket("m", 10_000, 1, r);
        c.submit(t);
        advance(5); // 2,000 tokens/s as the gateway sees it
        c.prefillDone(t);
        c.release(t);
        s = c.snapshot();
        assertThat(s.prefillRates().get(prefill).source()).isEqualTo("measured");
        // weighed against the prior over the 10 s horizon: 3,000 + 5/10 x (2,000 - 3,000)
        assertThat(s.prefillTokensPerSecond()).isEqualTo(2_500.0);
    }

    @Test
    void theStallWatchdogGivesSlackUntilTheWorkerCompletedAPrefillAndThenOnlyToAGuessedRate() {
        for (PrefillRateConfig rate : List.of(NO_PRIOR, prior(2_500))) {
            AdmissionController c = controller(incident(rate, QueueOrder.EDF));
            Ticket first = ticket("first", PROMPT, 1, new Recorder());
            c.submit(first);
            double cold = rate == NO_PRIOR ? PROMPT / (8_000 / AdmissionController.GUESS_SLACK)
                    : PROMPT / (2_500 / AdmissionController.GUESS_SLACK); // a cold start: the prior gets slack too
            assertThat(c.expectedPrefillNanos(first) / 1e9).as(rate.toString()).isCloseTo(cold,
                    org.assertj.core.data.Offset.offset(0.01));
            advance(4);
            c.prefillDone(first);
            c.release(first);
            Ticket second = ticket("second", PROMPT, 1, new Recorder());
            c.submit(second);
            double warm = rate == NO_PRIOR ? PROMPT / (8_000 / AdmissionController.GUESS_SLACK) : PROMPT / 2_500.0;
            assertThat(c.expectedPrefillNanos(second) / 1e9).as(rate.toString()).isCloseTo(warm,
                    org.assertj.core.data.Offset.offset(0.01));
            c.release(second);
        }
    }

    @Test
    void aRequestThatCouldOvertakeOneSentMomentsAgoAndMakeItLateWaits() {
        AdmissionController c = controller(config(8, 1_000_000, Duration.ofSeconds(60), 100_000, 4, 100_000, 10)
                .toBuilder().prefillRate(prior(1_000)).build());
        Recorder urgent = new Recorder();
        c.submit(new Ticket("urgent", 2_000, 1, "t", now.get() + Duration.ofMillis(3_200).toNanos(), Runnable::run,
                urgent)); // 2 s of prefill, due in 3.2 s (2 s + 4 % + the 1 s slack fits)
        assertThat(urgent.granted()).isTrue();
        Recorder next = new Recorder();
        // room in the window, and 4 s is within its own 10 s; but sent now it could reach the worker
        // first (two requests racing), and then "urgent" would come at 4 s, past its 3 s
        c.submit(new Ticket("next", 2_000, 1, "t", now.get() + Duration.ofSeconds(10).toNanos(), Runnable::run,
                next));
        assertThat(next.granted()).isFalse();
        advance(0.5);
        c.expire();
        assertThat(next.granted()).isFalse();
        advance(0.6); // "urgent" has surely reached the worker's queue by now
        c.expire();
        assertThat(next.granted()).isTrue();
        assertThat(next.rejection).isNull();
    }

    @Test
    void aNonStreamedClientWaitsForItsWholeAnswerAndTheCheckCountsTheDecodeForIt() {
        AdmissionController c = controller(config(8, 1_000_000, Duration.ofSeconds(60), 100_000, 1, 100_000, 10)
                .toBuilder().prefillRate(prior(1_000)).build());
        c.decodePace(2.56, 128); // 20 ms a token
        c.submit(ticket("running", 5_000, 1, new Recorder())); // 5 s of prefill ahead
        long deadline = now.get() + Duration.ofMillis(7_500).toNanos(); // first token at 6 s: in time
        Rejection streamed = c.submit(new Ticket("s", 1_000, 1, "t", deadline, Runnable::run, new Recorder()));
        assertThat(streamed).isNull();
        // the whole answer, 128 tokens later: 6 s + 1 s (behind the first) + 2.56 s, past 7.5 s
        Rejection whole = c.submit(new Ticket("w", 1_000, 1, "t", deadline, Runnable::run, new Recorder())
                .wholeAnswer(128));
        assertThat(whole.reason()).isEqualTo(RejectReason.DEADLINE_UNREACHABLE);
    }

    @Test
    void withNothingChangedTheQueueIsReviewedEveryReviewIntervalNotAtEverySweep() {
        AdmissionController c = controller(config(8, 1_000_000, Duration.ofSeconds(60), 100_000, 1, 100_000, 10)
                .toBuilder().prefillRate(prior(1_000)).scheduling(new SchedulingConfig(QueueOrder.EDF,
                        Duration.ofSeconds(1), AdmissionConfig.Shed.LONGEST)).build());
        Recorder running = new Recorder();
        Ticket first = ticket("running", 1_000, 1, running);
        c.submit(first); // 1 s of prefill, the window's one request
        assertThat(running.granted()).isTrue();
        Recorder waiting = new Recorder();
        // 1 s behind the first, its own 1 s, the second of margin: 3 s, due at 3.5 s
        assertThat(c.submit(new Ticket("waiting", 1_000, 1, "t", now.get() + Duration.ofMillis(3_500).toNanos(),
                Runnable::run, waiting))).isNull();
        advance(1.0);
        c.expire(); // a review: in time
        assertThat(waiting.rejection).isNull();
        // the first is overdue: from 1.5 s on, "waiting" is predicted past its deadline; the sweeps every
        // 20 ms dispatch nothing and change nothing, so they leave it to the next review, a second after the last
        for (int i = 0; i < 48; i++) {
            advance(0.02);
            c.expire();
        }
        assertThat(waiting.rejection).as("no review before the interval is up").isNull();
        advance(0.04);
        c.expire();
        assertThat(waiting.rejection).isNotNull();
        assertThat(waiting.rejection.reason()).isEqualTo(RejectReason.DEADLINE_UNREACHABLE);
        c.prefillDone(first);
        c.release(first);
        assertThat(c.snapshot().idle()).as("%s", c.snapshot()).isTrue();
    }

    @Test
    void aHugeWholeAnswerIsUnreachableNotAnOverflowThatLooksInTime() {
        AdmissionController c = controller(config(8, 1_000_000, Duration.ofSeconds(60), 100_000, 1, 100_000, 10)
                .toBuilder().prefillRate(prior(1_000)).build());
        c.decodePace(2.56, 128); // 20 ms a token: 2^31 tokens times n = 2^31 is 9e16 s, 9e25 ns
        for (long deadline : new long[] {now.get() + Duration.ofSeconds(30).toNanos(), Long.MAX_VALUE}) {
            Rejection whole = c.submit(new Ticket("huge", 1_000, 1, "t", deadline, Runnable::run, new Recorder())
                    .wholeAnswer(Integer.MAX_VALUE, Integer.MAX_VALUE));
            assertThat(whole).as("deadline %d", deadline).isNotNull();
            assertThat(whole.reason()).isEqualTo(RejectReason.DEADLINE_UNREACHABLE);
        }
        assertThat(c.snapshot().idle()).as("%s", c.snapshot()).isTrue(); // nothing held for them
    }

    @Test
    void whenNotAllOfAClassCanMakeItTheLongestPromptGivesWayUnlessShedIsLatest() {
        for (AdmissionConfig.Shed shed : AdmissionConfig.Shed.values()) {
            AdmissionController c = controller(config(8, 1_000_000, Duration.ofSeconds(60), 100_000, 1, 100_000, 10)
                    .toBuilder().prefillRate(prior(1_000)).scheduling(new SchedulingConfig(QueueOrder.EDF,
                            Duration.ofMillis(200), shed)).build());
            // 10 s, and the second of margin the checks leave before any prefill has been seen
            long due = now.get() + Duration.ofSeconds(11).toNanos();
            c.submit(ticket("running", 1_000, 1, new Recorder())); // 1 s
            Recorder long1 = new Recorder();
            assertThat(c.submit(new Ticket("long", 8_500, 1, "t", due, Runnable::run, long1))).isNull(); // 9.5 s
            List<Rejection> refused = new ArrayList<>();
            List<Recorder> shorts = new ArrayList<>();
            for (int i = 0; i < 3; i++) { // 1 s each: none fits behind the long one; all three do without it
                Recorder r = new Recorder();
                shorts.add(r);
                Rejection no = c.submit(new Ticket("short" + i, 1_000, 1, "t", due, Runnable::run, r));
                if (no != null) {
                    refused.add(no);
                }
            }
            if (shed == AdmissionConfig.Shed.LONGEST) {
                assertThat(long1.rejection.reason()).isEqualTo(RejectReason.SHED);
                assertThat(refused).isEmpty();
                assertThat(c.snapshot().queued()).isEqualTo(3);
            } else {
                assertThat(long1.rejection).isNull();
                assertThat(refused).hasSize(3).allMatch(r -> r.reason() == RejectReason.DEADLINE_UNREACHABLE);
            }
        }
    }

    @Test
    void aLongNewcomerThatWouldKeepAShorterQueuedOneFromItsDeadlineIsTheOneShed() {
        AdmissionController c = controller(config(8, 1_000_000, Duration.ofSeconds(60), 100_000, 1, 100_000, 10)
                .toBuilder().prefillRate(prior(1_000)).build());
        c.submit(ticket("running", 1_000, 1, new Recorder())); // 1 s
        Recorder shortOne = new Recorder();
        // due in 10 s (+ 1 s: the margin before any prefill has been seen), but its deadline is later than
        // the newcomer's: the newcomer goes first (EDF)
        assertThat(c.submit(new Ticket("short", 1_000, 1, "t", now.get() + Duration.ofMillis(11_400).toNanos(),
                Runnable::run, shortOne))).isNull();
        // due in 11.2 s: 1 + 8.5 = 9.5 s fits (10.9 s with the door's 4 % and the slack), but then "short"
        // comes at 11.5 s
        Rejection r = c.submit(new Ticket("long", 8_500, 1, "t", now.get() + Duration.ofMillis(11_200).toNanos(),
                Runnable::run, new Recorder()));
        assertThat(r.reason()).isEqualTo(RejectReason.SHED);
        assertThat(r.retryAfterSeconds()).isPositive();
        assertThat(shortOne.rejection).isNull();
        assertThat(c.snapshot().queued()).isEqualTo(1);
    }

    @Test
    void aStateFileRateIsAPriorOnlyWhereNothingBetterIsKnown() {
        AdmissionController c = controller(incident(NO_PRIOR, QueueOrder.EDF));
        Worker prefill = workers.prefill().get(0);
        c.savedRates(Map.of(prefill.url(), 2_400.0, "http://elsewhere:1", 9_999.0));
        AdmissionSnapshot s = c.snapshot();
        assertThat(s.prefillRates().get(prefill)).isEqualTo(new AdmissionSnapshot.PrefillRate(2_400.0, "state_file"));
        assertThat(s.throughputMeasured()).isTrue();
        AdmissionController configured = controller(incident(prior(2_500), QueueOrder.EDF));
        configured.savedRates(Map.of(prefill.url(), 2_400.0));
        assertThat(configured.snapshot().prefillRates().get(prefill).source()).isEqualTo("configured");
    }
}
