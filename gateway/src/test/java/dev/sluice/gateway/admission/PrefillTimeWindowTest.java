package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.withDefaultTimeWindow;
import static dev.sluice.gateway.admission.AdmissionFixtures.withTimeWindow;
import static dev.sluice.gateway.admission.AdmissionFixtures.workers;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionFixtures.Recorder;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.PrefillRateConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * {@code admission.prefill.max_inflight_time}: a prefill worker's window in seconds of its rate, so
 * that the order of the work stays the gateway's queue's (issue 19, bench-overload scenario 3). On
 * a fake clock, one prefill worker, the counted window wide open (8 requests, 1,000,000 tokens) so
 * that only the window in time binds.
 */
class PrefillTimeWindowTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final WorkerSet workers = workers(1, 1);
    private final List<Ticket> tickets = new ArrayList<>();
    private final List<Recorder> recorders = new ArrayList<>();

    private static AdmissionConfig open(PrefillRateConfig rate, Duration window) {
        AdmissionConfig c = withDefaultTimeWindow(32, 1_000_000, Duration.ofSeconds(60), 1_000_000, 8, 1_000_000, 256)
                .toBuilder().initialPrefillTokensPerSecond(8_000).prefillRate(rate).build();
        return withTimeWindow(c, window);
    }

    private static PrefillRateConfig prior(double tokensPerSecond) {
        return new PrefillRateConfig(OptionalDouble.of(tokensPerSecond), Map.of(), false, Optional.empty());
    }

    private static final PrefillRateConfig NO_PRIOR = new PrefillRateConfig(OptionalDouble.empty(), Map.of(), false,
            Optional.empty());

    private AdmissionController controller(AdmissionConfig cfg) {
        return new AdmissionController(cfg, workers, AdmissionObserver.NONE, now::get);
    }

    private void submit(AdmissionController c, long... prompts) {
        for (long tokens : prompts) {
            Recorder r = new Recorder();
            Ticket t = new Ticket("r" + tickets.size(), tokens, 1, "t", Long.MAX_VALUE, Runnable::run, r);
            tickets.add(t);
            recorders.add(r);
            assertThat(c.submit(t)).isNull();
        }
    }

    private long granted() {
        return recorders.stream().filter(Recorder::granted).count();
    }

    private void advance(double seconds) {
        now.addAndGet((long) (seconds * 1e9));
    }

    @Test
    void withAKnownRateAWorkerIsFedOnlyWhatItFinishesWithinTheWindow() {
        // 1,000 tokens/s, a 2 s window: 1.5 s held lets a second in, 2.5 s held keeps the third out
        AdmissionController c = controller(open(prior(1_000), Duration.ofSeconds(2)));
        submit(c, 1_500, 1_000, 1_000, 1_000);
        assertThat(granted()).as("1.5 s held < 2 s: the second goes; 2.5 s: the third waits").isEqualTo(2);
        assertThat(c.snapshot().queued()).isEqualTo(2);

        // 0.6 s later the worker has 1.9 s left: the third goes at the next sweep, the fourth still waits
        advance(0.6);
        c.expire();
        assertThat(granted()).isEqualTo(3);
        advance(0.3); // 2.6 s left
        c.expire();
        assertThat(granted()).isEqualTo(3);

        // the work it holds is done: the fourth goes; the accounting ends at zero
        c.prefillDone(tickets.get(0));
        c.prefillDone(tickets.get(1));
        c.expire();
        assertThat(granted()).isEqualTo(4);
        tickets.forEach(t -> {
            if (t.state == Ticket.State.DISPATCHED) {
                c.prefillDone(t);
            }
            c.release(t);
        });
        AdmissionSnapshot s = c.snapshot();
        assertThat(s.queued() + s.dispatched() + s.pendingTokens()).isZero();
    }

    @Test
    void whileTheRateIsAGuessASecondWaitsBehindTheFirstAndMoreMustFitTheWindowAtTheGuess() {
        // the guess is 8,000 tokens/s: a 2 s window holds 16,000 tokens, no progress assumed
        AdmissionController c = controller(open(NO_PRIOR, Duration.ofSeconds(2)));
        submit(c, 11_000, 10_000, 6_000, 1_000);
        // the 11,000 goes to the empty worker, the 10,000 waits behind it (the worker never runs dry while
        // its rate is learned); the 6,000 would make 27,000 held and waits, and nobody overtakes it
        assertThat(granted()).isEqualTo(2);
        advance(10); // however long it takes: nothing is assumed done while the rate is a guess
        c.expire();
        assertThat(granted()).isEqualTo(2);

        // the first prefill done is the worker's cold start, no sample (PrefillThroughput): still the guess;
        // the 6,000 goes behind the 10,000 as the second, and the 1,000 fits (17,000 > 16,000: no, it waits)
        advance(1);
        c.prefillDone(tickets.get(0));
        c.expire();
        assertThat(c.snapshot().throughputMeasured()).isFalse();
        assertThat(granted()).isEqualTo(3);

        // the second's interval is its compute alone (it waited behind the first): 10,000 in 4 s, measured
        advance(4);
        c.prefillDone(tickets.get(1));
        c.expire();
        assertThat(c.snapshot().throughputMeasured()).isTrue();
        assertThat(c.snapshot().prefillTokensPerSecond()).isEqualTo(2_500.0);
        assertThat(granted()).as("6,000 at 2,500 tokens/s is 2.4 s ahead: the 1,000 waits").isEqualTo(3);
        advance(0.5); // 1.9 s ahead
        c.expire();
        assertThat(granted()).isEqualTo(4);
    }

    @Test
    void zeroTurnsItOffAndTheCountedWindowAloneBinds() {
        AdmissionController c = controller(open(prior(1_000), Duration.ZERO));
        submit(c, 11_000, 10_000, 4_000, 1_000);
        assertThat(granted()).isEqualTo(4);
    }

    @Test
    void underCoordinationAReplicaGetsItsShareOfTheTime() {
        // this replica holds half of the token window: 1 s of the 2 s
        AdmissionController c = controller(open(prior(1_000), Duration.ofSeconds(2)));
        Worker prefill = workers.prefill().get(0);
        c.applyShares(new FleetShares(32, 1_000_000, Map.of(prefill.url(), 8), Map.of(prefill.url(), 500_000L),
                Map.of(), 1));
        submit(c, 900, 900, 900);
        // 0.9 s held < 1 s: the second goes; 1.8 s: the third waits
        assertThat(granted()).isEqualTo(2);
        c.applyShares(new FleetShares(32, 1_000_000, Map.of(prefill.url(), 8), Map.of(prefill.url(), 1_000_000L),
                Map.of(), 1));
        c.expire();
        assertThat(granted()).as("the whole window again: 1.8 s < 2 s").isEqualTo(3);
    }
}
