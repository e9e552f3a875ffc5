package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.config;
import static dev.sluice.gateway.admission.AdmissionFixtures.workers;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionFixtures.Recorder;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** {@link AdmissionController#applyShares}: this replica's share of the fleet's limits, in force at once, nothing dropped. */
class FleetSharesTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final WorkerSet workers = workers(1, 1);
    private final Worker prefill = workers.prefill().get(0);
    private final Worker decode = workers.decode().get(0);

    private static Ticket ticket(String id, long tokens, Recorder r) {
        return new Ticket(id, tokens, 1, "t", Long.MAX_VALUE, Runnable::run, r);
    }

    private FleetShares shares(int queue, long pending, int window, int streams) {
        return new FleetShares(queue, pending, Map.of(prefill.url(), window), Map.of(prefill.url(), 100_000L),
                Map.of(decode.url(), streams), 1);
    }

    @Test
    void aShareLimitsTheWindowAndTheQueueAndARaisedOneLetsTheQueuedGo() {
        AdmissionController c = new AdmissionController(config(8, 100_000, Duration.ofSeconds(30), 50_000, 4, 100_000,
                10), workers, AdmissionObserver.NONE, now::get);
        c.applyShares(shares(1, 100_000, 1, 10));
        Recorder a = new Recorder();
        Recorder b = new Recorder();
        Recorder d = new Recorder();
        assertThat(c.submit(ticket("a", 1000, a))).isNull();
        assertThat(a.granted()).isTrue();
        assertThat(c.submit(ticket("b", 1000, b))).isNull(); // the window's share (1) is taken: b waits
        assertThat(b.granted()).isFalse();
        Rejection full = c.submit(ticket("d", 1000, d)); // the queue's share (1) is taken
        assertThat(full).isNotNull();
        assertThat(full.reason()).isEqualTo(RejectReason.QUEUE_FULL);
        assertThat(full.message()).contains("1 requests");
        assertThat(c.config().maxQueuedRequests()).isEqualTo(8); // the fleet's, as configured

        c.applyShares(shares(4, 100_000, 2, 10));
        assertThat(b.granted()).isTrue();
        assertThat(c.snapshot().perWorker().get(prefill).prefillRequests()).isEqualTo(2);
    }

    @Test
    void aShrunkShareDropsNothingAdmittedAndReloadsKeepTheShare() {
        AdmissionController c = new AdmissionController(config(8, 100_000, Duration.ofSeconds(30), 50_000, 4, 100_000,
                10), workers, AdmissionObserver.NONE, now::get);
        Recorder[] r = new Recorder[3];
        Ticket[] t = new Ticket[3];
        for (int i = 0; i < 3; i++) {
            r[i] = new Recorder();
            t[i] = ticket("t" + i, 1000, r[i]);
            assertThat(c.submit(t[i])).isNull();
            assertThat(r[i].granted()).isTrue();
        }
        c.applyShares(shares(0, 100_000, 1, 10)); // below what is in flight
        assertThat(c.snapshot().perWorker().get(prefill).prefillRequests()).isEqualTo(3); // kept
        Recorder late = new Recorder();
        assertThat(c.submit(ticket("late", 1000, late))).isNotNull(); // nothing waits, nothing more goes
        c.prefillDone(t[0]);
        c.prefillDone(t[1]);
        c.reconfigure(config(16, 100_000, Duration.ofSeconds(30), 50_000, 8, 100_000, 10)); // the fleet grows
        assertThat(c.config().maxQueuedRequests()).isEqualTo(16);
        Recorder next = new Recorder();
        assertThat(c.submit(ticket("next", 1000, next))).isNotNull(); // still this replica's share: 1 in the window
        c.prefillDone(t[2]);
        Recorder last = new Recorder();
        assertThat(c.submit(ticket("last", 1000, last))).isNull();
        assertThat(last.granted()).isTrue();
        c.applyShares(null); // coordination off: the configured limits whole
        assertThat(c.submit(ticket("more", 1000, new Recorder()))).isNull();
        assertThat(c.snapshot().perWorker().get(prefill).prefillRequests()).isEqualTo(2);
    }

    @Test
    void aShareIsAnExplicitCopyOfTheFleetsLimitsBelowWhatTheFileWouldAccept() {
        dev.sluice.gateway.config.AdmissionConfig fleet = config(8, 100_000, Duration.ofSeconds(30), 50_000, 4,
                100_000, 10);
        dev.sluice.gateway.config.AdmissionConfig mine = shares(3, 20_000, 1, 10).applyTo(fleet);
        assertThat(mine.maxQueuedRequests()).isEqualTo(3);
        assertThat(mine.maxPendingTokens()).isEqualTo(20_000); // below max_request_tokens: the builder would refuse it
        assertThat(mine.maxRequestTokens()).isEqualTo(50_000);
        // everything else is the fleet's, component by component
        assertThat(mine.withShares(fleet.maxQueuedRequests(), fleet.maxPendingTokens())).isEqualTo(fleet);
        assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> fleet.withShares(-1, 0)))
                .hasMessageContaining("queue -1");
    }
}
