package dev.sluice.gateway.config;

import java.time.Duration;
import java.util.Objects;

/**
 * {@code admission.prefill_rate.calibration}: whether the gateway measures a prefill worker's rate with
 * its own requests before the worker takes client traffic (docs/admission.md, "Calibrating at start").
 *
 * @param onStart      which workers are calibrated when they join
 * @param promptTokens the size of the measured prompt (a quarter of it for the warm-up and the short one)
 * @param timeout      the bound on one worker's calibration, and on how long readiness waits for those of the
 *                     workers present at start
 */
public record PrefillCalibrationConfig(OnStart onStart, int promptTokens, Duration timeout) {
    /** The smallest measured prompt: below it the per-request overhead drowns the compute. */
    public static final int MIN_PROMPT_TOKENS = 1024;
    public static final PrefillCalibrationConfig DEFAULTS = new PrefillCalibrationConfig(OnStart.AUTO, 4096,
            Duration.ofSeconds(30));
    /** Today's behaviour: no calibration requests. */
    public static final PrefillCalibrationConfig OFF = new PrefillCalibrationConfig(OnStart.NEVER, 4096,
            Duration.ofSeconds(30));

    /** Which workers are calibrated. */
    public enum OnStart {
        /** Only a worker with no trusted rate: no configured prior, no telemetry, no kept (state file, fleet) rate. */
        AUTO,
        /** Also a worker whose only rate is a kept one (it may be stale); never one configured or read from telemetry. */
        ALWAYS,
        /** None. */
        NEVER
    }

    public PrefillCalibrationConfig {
        Objects.requireNonNull(onStart, "onStart");
        Objects.requireNonNull(timeout, "timeout");
        KeyCheck.atLeast("admission.prefill_rate.calibration.prompt_tokens", promptTokens, MIN_PROMPT_TOKENS);
        KeyCheck.atLeast("admission.prefill_rate.calibration.timeout", timeout, Duration.ofMillis(100));
    }
}
