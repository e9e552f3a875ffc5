package dev.sluice.gateway.health;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/** How one stall probe ended: the {@code result} label of {@code sluice_stall_probes_total}. */
public enum ProbeOutcome {
    /** The pair answered the gateway's own generation: the suspicion is over. */
    SUCCESS,
    /** A half answered with an error, or the probe could not be sent. */
    FAILED,
    /** No answer within {@code health.stall_panic.probe_timeout}: the stall goes on. */
    TIMEOUT;

    private final String label = name().toLowerCase(Locale.ROOT);

    public String label() {
        return label;
    }

    /** Every label, for exporting the counters at 0 from start-up. */
    public static List<String> labels() {
        return Arrays.stream(values()).map(ProbeOutcome::label).toList();
    }
}
