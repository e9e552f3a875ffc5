package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.withDefaultTimeWindow;
import static dev.sluice.gateway.admission.AdmissionFixtures.withTimeWindow;
import static dev.sluice.gateway.admission.AdmissionFixtures.workers;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionFixtures.Recorder;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.PrefillRateConfig;
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
 * Where a watched request stands (queue updates): its place in the order the dispatcher would take
 * the queue, and the work ahead of it at the prefill's rate less the window's lead. On a fake clock,
 * one prefill worker with a trusted prior of 1,000 tokens/s.
 */
class QueueStatusTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final WorkerSet workers = workers(1, 1);

    /** What a watcher heard: {ahead, eta ms} per report. */
    private static final class Heard implements QueueWatch {
        final List<long[]> reports = new ArrayList<>();

        @Override
        public void queued(int ahead, long etaMillis) {
            reports.add(new long[] {ahead, etaMillis});
        }

        long[] last() {
            return reports.get(reports.size() - 1);
        }
    }

    private AdmissionController controller(int windowRequests, Duration window) {
        PrefillRateConfig prior = new PrefillRateConfig(OptionalDouble.of(1_000), Map.of(), false, Optional.empty());
        AdmissionConfig c = withDefaultTimeWindow(32, 1_000_000, Duration.ofSeconds(600), 1_000_000, windowRequests,
                1_000_000, 256).toBuilder().prefillRate(prior).build();
        return new AdmissionController(withTimeWindow(c, window), workers, AdmissionObserver.NONE, now::get);
    }

    private Ticket ticket(String id, long tokens, int priority, QueueWatch watch) {
        Ticket t = new Ticket(id, tokens, priority, "t", Long.MAX_VALUE, Runnable::run, new Recorder());
        return watch == null ? t : t.watch(watch);
    }

    @Test
    void aWatchedRequestHearsItsPlaceAndTheWorkAheadAtOnceAndAtEveryReport() {
        AdmissionController c = controller(1, Duration.ZERO);
        c.submit(ticket("running", 2_000, 1, null)); // dispatched: 2 s of prefill
        c.submit(ticket("a", 1_000, 1, null));
        c.submit(ticket("b", 500, 1, null));
        Heard h = new Heard();
        c.submit(ticket("watched", 300, 1, h));
        assertThat(h.reports).hasSize(1);
        // two ahead of it; 2,000 + 1,000 + 500 tokens at 1,000/s, no lead seen yet and no window in time
        assertThat(h.last()).containsExactly(2, 3_500);

        now.addAndGet(1_000_000_000L); // a second of the running prefill done
        c.reportQueue();
        assertThat(h.last()).containsExactly(2, 2_500);

        Heard urgent = new Heard();
        c.submit(ticket("urgent", 100, 0, urgent)); // a higher class goes ahead of everyone queued
        assertThat(urgent.last()).containsExactly(0, 1_000);
        c.reportQueue();
        assertThat(h.last()).containsExactly(3, 2_600);
        assertThat(h.reports).hasSize(3); // nothing was said to it at the other's arrival
    }

    @Test
    void theEstimateCountsTheWindowsLeadOnceADispatchHasShownIt() {
        AdmissionController c = controller(8, Duration.ofSeconds(1)); // a worker takes more while under 1 s of work
        c.submit(ticket("r0", 3_000, 1, null)); // sent alone (an idle worker)
        c.submit(ticket("r1", 1_000, 1, null)); // waits: 3 s held, more than the 1 s window
        Heard h = new Heard();
        c.submit(ticket("watched", 1_000, 1, h));
        // 3,000 + 1,000 ahead at 1,000/s less the configured window in time (no dispatch seen yet)
        assertThat(h.last()).containsExactly(1, 3_000);

        now.addAndGet(2_100_000_000L); // 0.9 s of r0 left: r1 goes, holding 0.9 s ahead of it
        c.expire();
        c.reportQueue();
        // 900 left of r0 + 1,000 of r1 at 1,000/s, less the 0.9 s lead seen at r1's dispatch
        assertThat(h.last()).containsExactly(0, 1_000);
    }

    @Test
    void aRequestDispatchedAtOnceHearsNothingFromTheQueue() {
        AdmissionController c = controller(1, Duration.ZERO);
        Heard h = new Heard();
        assertThat(c.submit(ticket("first", 100, 1, h))).isNull();
        c.reportQueue();
        assertThat(h.reports).isEmpty();
    }

    @Test
    void theEstimateIsNeverNegativeNorInfinite() {
        assertThat(QueueStatus.etaMillis(100, 1_000, 5)).isZero();
        assertThat(QueueStatus.etaMillis(1_000, 0, 0)).isZero();
        assertThat(QueueStatus.etaMillis(2_500, 1_000, 0.5)).isEqualTo(2_000);
    }
}
