package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.config;
import static dev.sluice.gateway.admission.AdmissionFixtures.workers;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionFixtures.Recorder;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** A retry keeps its one ticket: the accounting stays exact across attempts; what its decode holds. */
class AdmissionRequeueTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final WorkerSet workers = workers(2, 2);
    private final AdmissionController c = new AdmissionController(
            config(4, 100_000, Duration.ofSeconds(30), 50_000, 1, 100_000, 10), workers, AdmissionObserver.NONE, now::get);

    private static Ticket ticket(String id, long tokens, Recorder r) {
        return new Ticket(id, tokens, 1, "t", Long.MAX_VALUE, Runnable::run, r);
    }

    @Test
    void aRequeuedTicketKeepsItsPendingTokensGivesBackItsPairAndAvoidsTheFailedWorkers() {
        Recorder r = new Recorder();
        Ticket t = ticket("a", 1000, r);
        c.submit(t);
        Worker p1 = r.prefill;
        Worker d1 = r.decode;
        assertThat(c.snapshot().dispatched()).isEqualTo(1);

        assertThat(c.requeue(t, List.of(p1, d1))).isTrue();
        assertThat(r.endings.get()).isEqualTo(2); // granted again at once, on the other pair
        assertThat(r.prefill).isNotSameAs(p1);
        assertThat(r.decode).isNotSameAs(d1);
        AdmissionSnapshot s = c.snapshot();
        assertThat(s.pendingTokens()).isEqualTo(1000);
        assertThat(s.inflightPrefillTokens()).isEqualTo(1000);
        assertThat(s.dispatched()).isEqualTo(1);
        assertThat(s.perWorker().get(p1).prefillRequests()).isZero();
        assertThat(s.perWorker().get(d1).streams()).isZero();

        c.release(t);
        assertThat(c.snapshot().idle()).isTrue();
    }

    @Test
    void aTicketRequeuedAfterItsPrefillFinishedCountsItsTokensAgain() {
        Recorder r = new Recorder();
        Ticket t = ticket("a", 1000, r);
        c.submit(t);
        c.prefillDone(t); // e.g. a KV transfer failure reported by the decode after the prefill finished
        assertThat(c.snapshot().pendingTokens()).isZero();
        c.requeue(t, List.of(r.decode));
        assertThat(c.snapshot().pendingTokens()).isEqualTo(1000);
        c.prefillDone(t);
        c.release(t);
        c.release(t);
        assertThat(c.snapshot().idle()).isTrue();
    }

    @Test
    void withNowhereElseToGoTheFailedWorkersAreUsedAgain() {
        AdmissionController one = new AdmissionController(config(4, 100_000, Duration.ofSeconds(30), 50_000, 1,
                100_000, 10), workers(1, 1), AdmissionObserver.NONE, now::get);
        Recorder r = new Recorder();
        Ticket t = ticket("a", 1000, r);
        one.submit(t);
        Worker p = r.prefill;
        one.requeue(t, List.of(p, r.decode));
        assertThat(r.endings.get()).isEqualTo(2);
        assertThat(r.prefill).isSameAs(p);
        one.release(t);
        assertThat(one.snapshot().idle()).isTrue();
    }

    @Test
    void aTicketThatEndedCannotBeRequeued() {
        Recorder r = new Recorder();
        Ticket t = ticket("a", 1000, r);
        c.submit(t);
        c.release(t);
        assertThat(c.requeue(t, List.of())).isFalse();
        assertThat(c.snapshot().idle()).isTrue();
    }

    /**
     * A decode that runs one stream at once, holding more of the gateway's: a stream with no first token
     * may be waiting there for a slot while the streams that started fill that cap, or for the grace after
     * a stream there ended (the decode gives the freed slot a step later). Which one waits is the decode's
     * choice, not the order of dispatch; with no stream started and none ended lately, a slot is free and
     * the silence is a stall. A non-streamed request shows no start and counts as started (never a false
     * stall); a decode whose cap is unknown is never judged; the counts come back to nothing.
     */
    @Test
    void aStreamMayWaitForADecodeSlotOnlyWhileTheStartedStreamsFillItsRunningCap() {
        long grace = 1_000_000;
        AdmissionController one = new AdmissionController(config(8, 100_000, Duration.ofSeconds(30), 50_000, 8,
                100_000, 8), workers(1, 1), AdmissionObserver.NONE, now::get);
        Recorder r = new Recorder();
        Ticket unknown = ticket("unknown", 100, r).streamed(true);
        Ticket other = ticket("other", 100, r).streamed(true);
        one.submit(unknown);
        one.submit(other);
        assertThat(unknown.awaitsDecodeStart()).as("cap unknown: not counted").isFalse();
        assertThat(one.decodeWaitingForSlot(unknown, grace)).isFalse();
        one.release(unknown);
        one.release(other);

        r.decode.identity(new dev.sluice.gateway.routing.WorkerIdentity("sglang", "0.5", "decode", 1, List.of(),
                List.of(), 0, 1));
        for (int round = 0; round < 2; round++) { // the second: nothing left counted by the first
            Ticket a = ticket("a" + round, 100, r).streamed(true);
            Ticket b = ticket("b" + round, 100, r).streamed(true);
            one.submit(a);
            one.submit(b);
            assertThat(a.awaitsDecodeStart()).isTrue();
            assertThat(one.decodeWaitingForSlot(a, grace)).as("none started: a slot is free").isFalse();
            one.decodeStarted(b); // b's KV landed first: b runs, a waits
            assertThat(b.awaitsDecodeStart()).isFalse();
            assertThat(one.decodeWaitingForSlot(a, grace)).isTrue();
            assertThat(one.requeue(a, List.of())).isTrue(); // a retry (granted again at once) awaits again
            assertThat(a.awaitsDecodeStart()).isTrue();
            now.addAndGet(grace); // past the grace of the requeue's end
            assertThat(one.decodeWaitingForSlot(a, grace)).isTrue();
            one.release(b);
            assertThat(one.decodeWaitingForSlot(a, grace)).as("b's slot, freed just now, not given yet").isTrue();
            now.addAndGet(grace);
            assertThat(one.decodeWaitingForSlot(a, grace)).as("alone on it past the grace: it should run").isFalse();
            one.release(a);
            assertThat(a.awaitsDecodeStart()).isFalse();
            now.addAndGet(grace);
        }
        Ticket direct = ticket("direct", 100, r).streamed(true).direct(true); // the decode prefills it: counted
        one.submit(direct);
        assertThat(r.prefill).isSameAs(r.decode);
        assertThat(direct.awaitsDecodeStart()).isTrue();
        one.release(direct);
        assertThat(direct.awaitsDecodeStart()).isFalse();
        now.addAndGet(grace);
        Ticket whole = ticket("whole", 100, r).wholeAnswer(50); // not streamed: shows no start
        Ticket s = ticket("s", 100, r).streamed(true);
        one.submit(whole);
        one.submit(s);
        assertThat(whole.awaitsDecodeStart()).isFalse();
        assertThat(one.decodeWaitingForSlot(s, grace)).as("the whole answer may hold the slot").isTrue();
        one.release(whole);
        one.release(s);
        assertThat(one.snapshot().idle()).isTrue();
    }
}
