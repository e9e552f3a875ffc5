package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.config;
import static dev.sluice.gateway.admission.AdmissionFixtures.workers;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.PrefillRateConfig;
import dev.sluice.gateway.config.PrefillCalibrationConfig.OnStart;
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
 * Admission's side of the calibration: which workers want one under each {@code on_start}, where a
 * calibrated rate ranks among the sources, and that it turns the deadline checks on at once (the first
 * burst's tail refused at the door, with no prior and nothing measured).
 */
class PrefillCalibrationTargetTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final WorkerSet workers = workers(1, 1);
    private final Worker prefill = workers.prefill().get(0);

    private AdmissionController controller(OptionalDouble prior) {
        AdmissionConfig cfg = config(32, 1_000_000, Duration.ofSeconds(30), 131_072, 4, 32_768, 256).toBuilder()
                .initialPrefillTokensPerSecond(8_000)
                .prefillRate(new PrefillRateConfig(prior, Map.of(), false, Optional.empty(), true)).build();
        return new AdmissionController(cfg, workers, AdmissionObserver.NONE, now::get);
    }

    private String source(AdmissionController c) {
        return c.snapshot().prefillRates().get(prefill).source();
    }

    @Test
    void autoWantsOnlyTheGuessAlwaysAlsoAKeptRateNeverNothing() {
        AdmissionController c = controller(OptionalDouble.empty());
        PrefillCalibrationTarget t = c.calibration();
        assertThat(t.wants(prefill, OnStart.AUTO)).isTrue();
        assertThat(t.wants(prefill, OnStart.NEVER)).isFalse();
        c.savedRates(Map.of(prefill.url(), 2_400.0));
        assertThat(t.wants(prefill, OnStart.AUTO)).isFalse();
        assertThat(t.wants(prefill, OnStart.ALWAYS)).isTrue();

        PrefillCalibrationTarget configured = controller(OptionalDouble.of(2_500)).calibration();
        assertThat(configured.wants(prefill, OnStart.ALWAYS)).as("the operator's number is not re-measured").isFalse();
    }

    @Test
    void aCalibratedRateRanksAboveAKeptOneAndBelowAConfiguredOneAndIsKept() {
        AdmissionController c = controller(OptionalDouble.empty());
        c.savedRates(Map.of(prefill.url(), 2_400.0));
        c.calibration().calibrated(prefill, 2_100.0);
        assertThat(c.snapshot().prefillRates().get(prefill)).isEqualTo(new AdmissionSnapshot.PrefillRate(2_100.0,
                "calibrated"));
        assertThat(c.calibration().wants(prefill, OnStart.ALWAYS)).as("once per worker").isFalse();
        assertThat(c.measuredRates()).isEqualTo(Map.of(prefill.url(), 2_100.0));

        AdmissionController configured = controller(OptionalDouble.of(2_500));
        configured.calibration().calibrated(prefill, 2_100.0);
        assertThat(source(configured)).isEqualTo("configured");
    }

    /** 2,500 tokens/s and 11,000-token prompts with 30 s to their first token: the burst's tail is refused at once. */
    @Test
    void withACalibratedRateTheFirstBurstsTailIsRefusedAtTheDoor() {
        AdmissionController c = controller(OptionalDouble.empty());
        c.calibration().calibrated(prefill, 2_500.0);
        List<Rejection> refused = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            Rejection r = c.submit(new Ticket("b" + i, 11_000, 1, "t", now.get() + Duration.ofSeconds(30).toNanos(),
                    Runnable::run, new AdmissionFixtures.Recorder()));
            if (r != null) {
                refused.add(r);
            }
        }
        // 30 s at 2,500 tokens/s (less the margin) holds six 4.4 s prefills: the other 14 are refused now
        assertThat(refused).hasSizeBetween(13, 15);
        assertThat(refused).allMatch(r -> r.reason() == RejectReason.DEADLINE_UNREACHABLE
                || r.reason() == RejectReason.SHED);

        AdmissionController blind = controller(OptionalDouble.empty());
        int blindRefused = 0;
        for (int i = 0; i < 20; i++) {
            if (blind.submit(new Ticket("b" + i, 11_000, 1, "t", now.get() + Duration.ofSeconds(30).toNanos(),
                    Runnable::run, new AdmissionFixtures.Recorder())) != null) {
                blindRefused++;
            }
        }
        assertThat(blindRefused).as("no evidence, no refusal at arrival").isZero();
    }

    @Test
    void clientPromptsInPrefillMakeTheWorkerBusy() {
        AdmissionController c = controller(OptionalDouble.empty());
        assertThat(c.calibration().busy(prefill)).isFalse();
        Ticket t = new Ticket("x", 4_000, 1, "t", Long.MAX_VALUE, Runnable::run, new AdmissionFixtures.Recorder());
        assertThat(c.submit(t)).isNull();
        assertThat(c.calibration().busy(prefill)).as("dispatched at once to the idle worker").isTrue();
        c.prefillDone(t);
        assertThat(c.calibration().busy(prefill)).isFalse();
    }
}
