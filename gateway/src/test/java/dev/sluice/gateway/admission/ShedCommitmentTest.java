package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.config;
import static dev.sluice.gateway.admission.AdmissionFixtures.workers;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionFixtures.Recorder;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.PrefillRateConfig;
import dev.sluice.gateway.config.AdmissionConfig.QueueOrder;
import dev.sluice.gateway.config.AdmissionConfig.SchedulingConfig;
import dev.sluice.gateway.config.AdmissionConfig.Shed;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The late refusals' rules on a fake clock, one prefill worker at a prior of 1,000 tokens/s, a window of
 * one request, 30 s to the first token: a request queued past {@code shed_commit_after} is committed (no
 * shed for a later arrival; a newcomer that would push it past its deadline is refused at its door), and
 * the newcomer is judged with a margin that grows with the prefill it waits for ({@link RateSpread}).
 */
class ShedCommitmentTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    private AdmissionController controller(Duration commitAfter, List<String> classes) {
        AdmissionConfig c = config(32, 1_000_000, Duration.ofSeconds(30), 1_000_000, 1, 1_000_000, 256).toBuilder()
                .priorities(classes).defaultPriority(classes.get(classes.size() - 1))
                .prefillRate(new PrefillRateConfig(OptionalDouble.of(1_000), Map.of(), false, Optional.empty()))
                .scheduling(new SchedulingConfig(QueueOrder.EDF, Duration.ofMillis(200), Shed.LONGEST, commitAfter))
                .build();
        return new AdmissionController(c, workers(1, 1), AdmissionObserver.NONE, now::get);
    }

    private void advance(double seconds) {
        now.addAndGet((long) (seconds * 1e9));
    }

    private static Ticket ticket(String id, long tokens, int priority, Recorder r) {
        return new Ticket(id, tokens, priority, "t", Long.MAX_VALUE, Runnable::run, r);
    }

    /**
     * 1,000 tokens in prefill; the long one (20,000) queued, its first token predicted at ~22 s; 5 s later a
     * shorter one (9,000) of its class whose first token behind it would come ~31 s after it arrived, and
     * ~15 s in its place.
     */
    private Rejection longThenShort(AdmissionController c, Recorder longOne, double wait) {
        assertThat(c.submit(ticket("head", 1_000, 0, new Recorder()))).isNull();
        assertThat(c.submit(ticket("long", 20_000, 0, longOne))).isNull();
        assertThat(c.snapshot().queued()).isEqualTo(1);
        advance(wait);
        c.expire(); // the sweep: it commits what has waited long enough, and reviews
        assertThat(longOne.rejection).isNull();
        return c.submit(ticket("short", 9_000, 0, new Recorder()));
    }

    @Test
    void aRequestQueuedPastTheHorizonIsNotShedTheNewcomerIsRefusedAtItsDoor() {
        AdmissionController c = controller(Duration.ofSeconds(4), List.of("normal"));
        Recorder longOne = new Recorder();
        Rejection newcomer = longThenShort(c, longOne, 5);

        assertThat(newcomer).isNotNull();
        assertThat(newcomer.reason()).isEqualTo(RejectReason.DEADLINE_UNREACHABLE);
        assertThat(longOne.rejection).as("committed: it keeps its place").isNull();
        assertThat(c.snapshot().queued()).isEqualTo(1);
        c.expire();
        assertThat(longOne.rejection).as("and the review does not shed it either").isNull();
    }

    @Test
    void beforeTheHorizonTheLongestStillGivesWay() {
        for (Duration commitAfter : List.of(Duration.ofSeconds(6), Duration.ZERO)) { // later; never
            AdmissionController c = controller(commitAfter, List.of("normal"));
            Recorder longOne = new Recorder();
            Rejection newcomer = longThenShort(c, longOne, 5);

            assertThat(newcomer).as("commit after %s", commitAfter).isNull();
            assertThat(longOne.rejection).isNotNull();
            assertThat(longOne.rejection.reason()).isEqualTo(RejectReason.SHED);
        }
    }

    @Test
    void aHigherClassNewcomerThatWouldMakeACommittedRequestLateIsRefusedInstead() {
        AdmissionController c = controller(Duration.ofSeconds(4), List.of("high", "normal"));
        assertThat(c.submit(ticket("head", 1_000, 1, new Recorder()))).isNull();
        Recorder queued = new Recorder();
        assertThat(c.submit(ticket("normal", 20_000, 1, queued))).isNull(); // ~22 s of its 30
        advance(5);
        c.expire();

        // 10,000 tokens ahead of it: ~5 + 31 s, past its deadline
        Rejection high = c.submit(ticket("high", 10_000, 0, new Recorder()));
        assertThat(high).isNotNull();
        assertThat(high.reason()).isEqualTo(RejectReason.SHED);
        assertThat(high.message()).contains("1 request queued for over 4000 ms").contains("committed");
        assertThat(queued.rejection).isNull();

        // one that leaves it in time still goes ahead of it
        assertThat(c.submit(ticket("high-short", 2_000, 0, new Recorder()))).isNull();
        assertThat(queued.rejection).isNull();
        assertThat(c.snapshot().queuedByClass()).containsExactly(1, 1);
    }

    @Test
    void aHigherClassNewcomerGoesAheadOfAnUncommittedRequestWhichIsRefusedAtOnce() {
        AdmissionController c = controller(Duration.ofSeconds(4), List.of("high", "normal"));
        assertThat(c.submit(ticket("head", 1_000, 1, new Recorder()))).isNull();
        Recorder queued = new Recorder();
        assertThat(c.submit(ticket("normal", 20_000, 1, queued))).isNull();
        advance(2);
        c.expire();

        assertThat(c.submit(ticket("high", 10_000, 0, new Recorder()))).as("strict priority").isNull();
        assertThat(queued.rejection).isNotNull();
        assertThat(queued.rejection.reason()).isEqualTo(RejectReason.DEADLINE_UNREACHABLE);
    }

    @Test
    void aCommittedRequestLateAnywayIsNoReasonToRefuseTheNewcomer() {
        AdmissionController c = controller(Duration.ofSeconds(4), List.of("high", "normal"));
        assertThat(c.submit(ticket("head", 1_000, 1, new Recorder()))).isNull();
        Recorder queued = new Recorder();
        assertThat(c.submit(ticket("normal", 26_500, 1, queued))).isNull(); // 29.6 s of its 30 with the margin
        advance(5);
        // no sweep: it commits at the next door. The head's prefill (1 s at the prior) is still not done 5 s on:
        // evidence that puts the queued one at 5 + 26.5 + 1 = 32.5 s, late with or without a newcomer
        Rejection high = c.submit(ticket("high", 2_000, 0, new Recorder()));
        assertThat(high).as("it was late without the newcomer: the newcomer is not to blame").isNull();
        assertThat(queued.rejection).isNotNull();
        assertThat(queued.rejection.reason()).isEqualTo(RejectReason.DEADLINE_UNREACHABLE);
    }

    @Test
    void onNewEvidenceACommittedRequestGivesWayToAnotherCommittedOne() {
        AdmissionController c = controller(Duration.ofSeconds(4), List.of("normal"));
        assertThat(c.submit(ticket("head", 1_000, 0, new Recorder()))).isNull();
        Recorder longOne = new Recorder();
        Recorder shortOne = new Recorder();
        assertThat(c.submit(ticket("long", 12_000, 0, longOne))).isNull(); // ~14.5 s of its 30
        assertThat(c.submit(ticket("short", 8_000, 0, shortOne))).isNull(); // ~22.8 s of its 30
        advance(5);
        c.expire();
        assertThat(longOne.rejection).isNull();
        assertThat(shortOne.rejection).isNull();
        // the head's 1 s of prefill is still not done 10 s on: the short one would now come at 10 + 20 + 1 = 31 s.
        // Both are committed: the long one gives way to it (Moore–Hodgson's count), late either way
        advance(5);
        c.expire();
        assertThat(longOne.rejection).isNotNull();
        assertThat(longOne.rejection.reason()).isEqualTo(RejectReason.SHED);
        assertThat(shortOne.rejection).isNull();
    }

    @Test
    void theNewcomersMarginGrowsWithThePrefillAheadOfIt() {
        // nothing in flight: a lone prompt waits only for itself; the margin is 2 x 2 % of its prefill seconds
        AdmissionController c = controller(Duration.ofSeconds(4), List.of("normal"));
        // 28,300 tokens: 28.3 s + the 1 s slack = 29.3 s fits 30 s at the point prediction, not with 1.13 s margin
        Rejection marginal = c.submit(ticket("marginal", 28_300, 0, new Recorder()));
        assertThat(marginal).isNotNull();
        assertThat(marginal.reason()).isEqualTo(RejectReason.DEADLINE_UNREACHABLE);
        // 27,000 tokens: 27 s + 1.08 s + 1 s = 29.1 s: admitted
        assertThat(c.submit(ticket("fits", 27_000, 0, new Recorder()))).isNull();
        // a short one later in line: 1,000 tokens 28 s ahead: its own margin is 2 x 2 % x 29 s = 1.16 s
        assertThat(c.submit(ticket("behind", 1_000, 0, new Recorder()))).isNotNull();
    }
}
