package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.config;
import static dev.sluice.gateway.admission.AdmissionFixtures.workers;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionFixtures.Recorder;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerStatus;
import dev.sluice.gateway.routing.WorkerState;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class AdmissionControllerTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final WorkerSet workers = workers(1, 1);

    private AdmissionController controller(AdmissionConfig cfg) {
        return new AdmissionController(cfg, workers, AdmissionObserver.NONE, now::get);
    }

    private static Ticket ticket(String id, long tokens, int priority, String tenant, Recorder r) {
        return new Ticket(id, tokens, priority, tenant, Long.MAX_VALUE, Runnable::run, r);
    }

    @Test
    void dispatchesWhileThePrefillWindowHasRoomThenQueues() {
        AdmissionController c = controller(config(4, 100_000, Duration.ofSeconds(30), 50_000, 2, 100_000, 10));
        Recorder a = new Recorder();
        Recorder b = new Recorder();
        Recorder q = new Recorder();
        assertThat(c.submit(ticket("a", 1000, 1, "t", a))).isNull();
        assertThat(c.submit(ticket("b", 1000, 1, "t", b))).isNull();
        Ticket third = ticket("c", 1000, 1, "t", q);
        assertThat(c.submit(third)).isNull();

        assertThat(a.granted()).isTrue();
        assertThat(b.granted()).isTrue();
        assertThat(q.granted()).isFalse();
        assertThat(c.snapshot().queued()).isEqualTo(1);
        assertThat(c.snapshot().pendingTokens()).isEqualTo(3000);
    }

    @Test
    void reloadedPriorityClassesKeepTheWaitingRequestsInOrder() {
        AdmissionConfig base = config(8, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10);
        AdmissionController c = controller(base);
        Recorder first = new Recorder();
        Ticket running = ticket("running", 1000, 1, "t", first);
        c.submit(running); // takes the one prefill slot
        Recorder high = new Recorder();
        Recorder low = new Recorder();
        c.submit(ticket("low", 1000, 2, "t", low));   // class "low"
        c.submit(ticket("high", 1000, 0, "t", high)); // class "high": served first
        assertThat(c.snapshot().queuedByClass()).containsExactly(1, 0, 1);

        // reload: "low" is gone (its request goes to the default "normal"), a new top class "urgent"
        AdmissionConfig next = new AdmissionConfig(base.maxQueuedRequests(), base.maxPendingTokens(), base.queueTimeout(),
                base.maxRequestTokens(), base.prefillMaxInflightRequests(), base.prefillMaxInflightTokens(),
                base.decodeMaxInflightStreams(), base.initialPrefillTokensPerSecond(), base.retryAfterMin(),
                base.retryAfterMax(), base.drainGrace(), List.of("urgent", "high", "normal"), "normal", Map.of(),
                base.tokenizer());
        c.reconfigure(next);

        assertThat(c.snapshot().queuedByClass()).containsExactly(0, 1, 1);
        assertThat(c.snapshot().queued()).isEqualTo(2);
        c.prefillDone(running);
        assertThat(high.granted()).isTrue();
        assertThat(low.granted()).isFalse();
        c.release(running);
        assertThat(c.snapshot().pendingTokens()).isEqualTo(2000);
    }

    @Test
    void aQueueOfZeroMeansNeverWaitNotNeverServe() {
        // max_queued_requests: 0 with one prefill slot: what a window takes now goes, the rest is 429 at once
        AdmissionController c = controller(config(0, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10));
        Recorder a = new Recorder();
        Ticket ta = ticket("a", 1000, 1, "t", a);
        assertThat(c.submit(ta)).isNull();
        assertThat(a.granted()).isTrue();

        Rejection full = c.submit(ticket("b", 1000, 1, "t", new Recorder()));
        assertThat(full.reason()).isEqualTo(RejectReason.QUEUE_FULL);
        assertThat(c.snapshot().queued()).isZero();
        assertThat(c.snapshot().pendingTokens()).isEqualTo(1000); // only a's, b left nothing behind

        c.prefillDone(ta);
        Recorder later = new Recorder();
        assertThat(c.submit(ticket("c", 1000, 1, "t", later))).isNull();
        assertThat(later.granted()).isTrue();
    }

    @Test
    void prefillDoneReleasesPendingTokensAndTheWindowSoTheNextOneGoes() {
        AdmissionController c = controller(config(4, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10));
        Recorder a = new Recorder();
        Recorder b = new Recorder();
        Ticket ta = ticket("a", 1000, 1, "t", a);
        Ticket tb = ticket("b", 2000, 1, "t", b);
        c.submit(ta);
        c.submit(tb);
        assertThat(b.granted()).isFalse();

        c.prefillDone(ta);
        assertThat(b.granted()).isTrue();
        assertThat(c.snapshot().pendingTokens()).isEqualTo(2000);
        c.release(ta);
        c.release(ta); // twice: nothing given back twice
        c.prefillDone(tb);
        c.release(tb);
        assertThat(c.snapshot().idle()).isTrue();
    }

    @Test
    void rejectsAtOnceWhatCanNeverRunOrDoesNotFit() {
        AdmissionController c = controller(config(1, 5000, Duration.ofSeconds(30), 4000, 1, 100_000, 10));
        assertThat(c.submit(ticket("huge", 4001, 1, "t", new Recorder())).reason()).isEqualTo(RejectReason.REQUEST_TOO_LARGE);

        c.submit(ticket("a", 3000, 1, "t", new Recorder()));          // dispatched
        Rejection budget = c.submit(ticket("b", 3000, 1, "t", new Recorder()));
        assertThat(budget.reason()).isEqualTo(RejectReason.TOKEN_BUDGET_EXCEEDED);
        assertThat(budget.retryAfterSeconds()).isBetween(1L, 60L);

        c.submit(ticket("c", 1000, 1, "t", new Recorder()));          // queued (window full)
        assertThat(c.submit(ticket("d", 1000, 1, "t", new Recorder())).reason()).isEqualTo(RejectReason.QUEUE_FULL);
    }

    @Test
    void aShorterNewcomerTakesTheFullQueuesLongestPlaceOfItsClassAndTheLongOneIsToldShed() {
        AdmissionController c = controller(config(1, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10));
        Ticket running = ticket("running", 100, 1, "t", new Recorder());
        c.submit(running);                                          // dispatched: the window (1) is full
        Recorder longOne = new Recorder();
        Ticket queuedLong = ticket("long", 16_000, 1, "t", longOne);
        assertThat(c.submit(queuedLong)).isNull();                  // queued: the queue (1) is full
        Recorder shortOne = new Recorder();
        Ticket newcomer = ticket("short", 1_000, 1, "t", shortOne);

        assertThat(c.submit(newcomer)).isNull();
        assertThat(longOne.rejection.reason()).isEqualTo(RejectReason.SHED);
        assertThat(longOne.rejection.retryAfterSeconds()).isBetween(1L, 60L);
        assertThat(c.snapshot().queued()).isEqualTo(1);
        assertThat(c.snapshot().pendingTokens()).isEqualTo(1_100); // the long one's tokens were given back
        assertThat(c.release(queuedLong)).as("already ended: nothing given back twice").isFalse();

        c.prefillDone(running);
        c.release(running);
        assertThat(shortOne.granted()).isTrue();
        c.prefillDone(newcomer);
        c.release(newcomer);
        assertThat(c.snapshot().idle()).isTrue();
    }

    @Test
    void aHigherPriorityArrivalEvictsTheLowerOneNeverTheReverse() {
        AdmissionController c = controller(config(1, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10));
        c.submit(ticket("running", 100, 1, "t", new Recorder()));
        Recorder low = new Recorder();
        c.submit(ticket("low", 100, 2, "t", low));
        Recorder high = new Recorder();

        assertThat(c.submit(ticket("high", 100, 0, "t", high))).isNull();
        assertThat(low.rejection.reason()).isEqualTo(RejectReason.EVICTED);
        // and a low one cannot push the high one out
        assertThat(c.submit(ticket("low2", 100, 2, "t", new Recorder())).reason()).isEqualTo(RejectReason.QUEUE_FULL);
        assertThat(high.rejection).isNull();
    }

    @Test
    void higherClassesAreServedFirstAndTenantsRoundRobinWithinAClass() {
        AdmissionController c = controller(config(32, 1_000_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10));
        Ticket blocker = ticket("blocker", 10, 1, "x", new Recorder());
        c.submit(blocker);
        StringBuilder order = new StringBuilder();
        String[][] arrivals = {{"a1", "a", "1"}, {"a2", "a", "1"}, {"a3", "a", "1"}, {"b1", "b", "1"}, {"h1", "h", "0"}};
        Ticket[] tickets = new Ticket[arrivals.length];
        for (int i = 0; i < arrivals.length; i++) {
            String id = arrivals[i][0];
            tickets[i] = new Ticket(id, 10, Integer.parseInt(arrivals[i][2]), arrivals[i][1], Long.MAX_VALUE, Runnable::run,
                    new TicketListener() {
                        @Override
                        public void granted(dev.sluice.gateway.routing.Worker p, dev.sluice.gateway.routing.Worker d) {
                            order.append(id).append(' ');
                        }

                        @Override
                        public void rejected(Rejection r) {
                        }
                    });
            c.submit(tickets[i]);
        }
        Ticket current = blocker;
        for (int i = 0; i < arrivals.length; i++) {
            c.prefillDone(current);
            c.release(current);
            String next = order.toString().trim().split(" ")[i];
            for (Ticket t : tickets) {
                if (t.id().equals(next)) {
                    current = t;
                }
            }
        }
        c.prefillDone(current);
        c.release(current);
        assertThat(order.toString().trim()).isEqualTo("h1 a1 b1 a2 a3");
        assertThat(c.snapshot().idle()).isTrue();
    }

    @Test
    void queuedRequestsTimeOutAndAClientDeadlineCountsToo() {
        AdmissionController c = controller(config(8, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10));
        c.submit(ticket("running", 100, 1, "t", new Recorder()));
        Recorder byQueue = new Recorder();
        Recorder byClient = new Recorder();
        c.submit(ticket("q", 100, 1, "t", byQueue));
        c.submit(new Ticket("d", 100, 1, "t", now.get() + Duration.ofSeconds(2).toNanos(), Runnable::run, byClient));

        now.addAndGet(Duration.ofSeconds(3).toNanos());
        c.expire();
        assertThat(byClient.rejection.reason()).isEqualTo(RejectReason.QUEUE_TIMEOUT);
        assertThat(byQueue.rejection).isNull();
        now.addAndGet(Duration.ofSeconds(30).toNanos());
        c.expire();
        assertThat(byQueue.rejection.reason()).isEqualTo(RejectReason.QUEUE_TIMEOUT);
        assertThat(c.snapshot().queued()).isZero();
    }

    @Test
    void aDeadlineThePredictedWaitCannotMeetIsRejectedAtArrival() {
        AdmissionController c = controller(config(8, 1_000_000, Duration.ofSeconds(300), 500_000, 1, 1_000_000, 10));
        // measure a throughput: 10k tokens prefilled in one second (after a first prefill, the cold start)
        for (String id : List.of("cold", "m")) {
            Ticket first = ticket(id, 10_000, 1, "t", new Recorder());
            c.submit(first);
            now.addAndGet(Duration.ofSeconds(1).toNanos());
            c.prefillDone(first);
            c.release(first);
        }
        assertThat(c.snapshot().throughputMeasured()).isTrue();
        c.submit(ticket("big", 100_000, 1, "t", new Recorder())); // ~10 s of work ahead of anyone

        Rejection r = c.submit(new Ticket("hurry", 100, 1, "t", now.get() + Duration.ofSeconds(2).toNanos(),
                Runnable::run, new Recorder()));
        assertThat(r.reason()).isEqualTo(RejectReason.DEADLINE_UNREACHABLE);
        assertThat(r.retryAfterSeconds()).as("~10 s ahead, its own prompt, the margin (1 s: two prefills seen)")
                .isBetween(10L, 12L);
        assertThat(c.submit(new Ticket("patient", 100, 1, "t", now.get() + Duration.ofSeconds(60).toNanos(),
                Runnable::run, new Recorder()))).isNull();
    }

    @Test
    void aQueuedRequestWhoseFirstTokenCanNoLongerMeetItsDeadlineIsNotSentToAWorker() {
        AdmissionController c = controller(config(8, 1_000_000, Duration.ofSeconds(5), 500_000, 1, 1_000_000, 10));
        for (String id : List.of("cold", "warm")) { // the first is the cold start (no sample), then ~10k tokens/s
            Ticket warm = ticket(id, 10_000, 1, "t", new Recorder());
            c.submit(warm);
            now.addAndGet(Duration.ofSeconds(1).toNanos());
            c.prefillDone(warm);
            c.release(warm);
        }
        assertThat(c.snapshot().throughputMeasured()).isTrue();
        Ticket big = ticket("big", 30_000, 1, "t", new Recorder());
        c.submit(big);
        Recorder late = new Recorder();
        c.submit(ticket("late", 1_000, 1, "t", late)); // predicted first token in ~3.1 s: fits the 5 s
        assertThat(late.granted()).isFalse();

        now.addAndGet(Duration.ofMillis(4_950).toNanos()); // the prefill was slower than predicted
        c.prefillDone(big);

        assertThat(late.granted()).as("not prefilled for a client about to leave").isFalse();
        assertThat(late.rejection.reason()).isEqualTo(RejectReason.QUEUE_TIMEOUT);
        c.release(big);
        assertThat(c.snapshot().idle()).isTrue();
    }

    @Test
    void noUsableWorkerIsNoCapacityAndDrainingIsDraining() {
        AdmissionController c = controller(config(8, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10));
        workers.decode().get(0).status(new dev.sluice.gateway.routing.WorkerStatus(dev.sluice.gateway.routing.WorkerState.EJECTED, "test", java.time.Instant.now()));
        assertThat(c.submit(ticket("x", 10, 1, "t", new Recorder())).reason()).isEqualTo(RejectReason.NO_CAPACITY);
        workers.decode().get(0).status(new dev.sluice.gateway.routing.WorkerStatus(dev.sluice.gateway.routing.WorkerState.HEALTHY, "", java.time.Instant.now()));
        c.drain();
        assertThat(c.submit(ticket("y", 10, 1, "t", new Recorder())).reason()).isEqualTo(RejectReason.DRAINING);
    }

    @Test
    void aSuspectPairIsRefusedWithARetryAfterReachingItsNextProbeUnlessTheOtherRoleIsPlainlyDown() {
        AdmissionController c = controller(config(8, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10));
        Worker p = workers.prefill().get(0);
        Worker d = workers.decode().get(0);
        for (Worker w : List.of(p, d)) {
            w.status(new WorkerStatus(WorkerState.SUSPECT, "stalled", java.time.Instant.now()));
            w.suspectProbe(new dev.sluice.gateway.routing.SuspectProbe(now.get() + 4_200_000_000L, 0, 2));
        }
        Rejection r = c.submit(ticket("x", 10, 1, "t", new Recorder()));
        assertThat(r.reason()).isEqualTo(RejectReason.WORKER_SUSPECT);
        assertThat(r.retryAfterSeconds()).as("never before the next probe (4.2 s away)").isGreaterThanOrEqualTo(5);
        assertThat(r.message()).contains("health.stall_panic").contains("the next probe in 4200 ms")
                .contains("2 failed so far");
        d.status(new WorkerStatus(WorkerState.EJECTED, "active check", java.time.Instant.now()));
        d.suspectProbe(null);
        assertThat(c.submit(ticket("y", 10, 1, "t", new Recorder())).reason())
                .as("an ejected decode is what keeps the pair out: no probe brings it back")
                .isEqualTo(RejectReason.NO_CAPACITY);
        for (Worker w : List.of(p, d)) {
            w.status(new WorkerStatus(WorkerState.HEALTHY, "", java.time.Instant.now()));
            w.suspectProbe(null);
        }
        Ticket z = ticket("z", 10, 1, "t", new Recorder());
        assertThat(c.submit(z)).as("healed: admitted").isNull();
        c.release(z);
        assertThat(c.snapshot().idle()).isTrue();
    }

    @Test
    void aQueuedClientThatLeavesIsRemovedAtOnce() {
        AdmissionController c = controller(config(8, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10));
        Ticket running = ticket("running", 100, 1, "t", new Recorder());
        c.submit(running);
        Recorder gone = new Recorder();
        Ticket queued = ticket("gone", 500, 1, "t", gone);
        c.submit(queued);

        c.release(queued);
        assertThat(c.snapshot().queued()).isZero();
        assertThat(c.snapshot().pendingTokens()).isEqualTo(100);
        c.prefillDone(running);
        assertThat(gone.endings.get()).isZero(); // never granted after it left
        c.release(running);
        assertThat(c.snapshot().idle()).isTrue();
    }

    /**
     * A queued request whose deadline passed is dropped at dispatch, after its pair was picked: a
     * half-open (or suspect) worker's trial permit it took must go back, or the worker never gets
     * its next trial. Failed before the fix (the permit stayed taken: 0 left).
     */
    @Test
    void aRequestDroppedAtDispatchGivesBackTheTrialPermitItTook() {
        AdmissionController c = controller(config(4, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10));
        Recorder first = new Recorder();
        Ticket running = ticket("running", 1000, 1, "t", first);
        c.submit(running);
        Recorder late = new Recorder();
        c.submit(new Ticket("late", 1000, 1, "t", now.get() + 1_000_000_000L, Runnable::run, late));
        Worker decode = workers.decode().get(0);
        decode.grantTrials(1);
        decode.status(new WorkerStatus(WorkerState.HALF_OPEN, "on trial", java.time.Instant.now()));
        now.addAndGet(2_000_000_000L); // past the late one's deadline, before any expiry sweep
        c.release(running);
        assertThat(late.rejection).isNotNull();
        assertThat(late.rejection.reason()).isEqualTo(RejectReason.QUEUE_TIMEOUT);
        assertThat(decode.trialPermits()).isEqualTo(1);
    }
}
