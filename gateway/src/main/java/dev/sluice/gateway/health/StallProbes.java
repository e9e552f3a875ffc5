package dev.sluice.gateway.health;

import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.background.PeriodicTask;
import dev.sluice.gateway.routing.Worker;
import io.netty.channel.EventLoop;
import java.time.Duration;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The panic mode's probes ({@code health.stall_panic}): every {@value #ROUND_MS} ms, each suspect
 * worker whose back-off is over gets one probe of its pair, the gateway's own small generation
 * through both halves ({@link Sender}), never a client's request. The verdict goes to the
 * {@link HealthTable}: a success puts the pair back in rotation, a failure doubles the wait before
 * the next one. Runs on one event loop (the control loop), where the probes' verdicts come back.
 */
public final class StallProbes implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(StallProbes.class);
    static final long ROUND_MS = 50;

    /** Sends one probe of {@code pair}, on the probes' loop; calls {@code done} exactly once, on that loop. */
    public interface Sender {
        void send(HealthTable.ProbePair pair, Duration timeout, Verdict done);
    }

    /** A probe's end. */
    public interface Verdict {
        void ended(ProbeOutcome outcome, String detail);
    }

    /** Told of each verdict, once for each suspect worker the probe tested (metrics). */
    public interface Results {
        void probed(Worker worker, ProbeOutcome outcome);
    }

    private final HealthTable table;
    private final Sender sender;
    private final EventLoop loop;
    private final BackgroundTasks background;
    private final Results results;
    private PeriodicTask task;

    public StallProbes(HealthTable table, Sender sender, EventLoop loop, BackgroundTasks background, Results results) {
        this.table = Objects.requireNonNull(table, "table");
        this.sender = Objects.requireNonNull(sender, "sender");
        this.loop = Objects.requireNonNull(loop, "loop");
        this.background = Objects.requireNonNull(background, "background");
        this.results = Objects.requireNonNull(results, "results");
    }

    public void start() {
        task = background.every("stall_probe", loop, Duration.ofMillis(ROUND_MS), this::round);
    }

    /** Sends every probe whose time has come (on the loop). */
    void round() {
        for (HealthTable.ProbePair pair : table.startDueProbes()) {
            Duration timeout = table.config().stallPanic().probeTimeout();
            log.info("stall probe sent prefill={} decode={} timeout_ms={}", pair.prefill().name(),
                    pair.decode().name(), timeout.toMillis());
            boolean[] once = {false};
            Verdict done = (outcome, detail) -> {
                if (!once[0]) {
                    once[0] = true;
                    ended(pair, outcome, detail);
                }
            };
            try {
                sender.send(pair, timeout, done);
            } catch (RuntimeException e) {
                log.warn("stall probe could not be sent prefill={} decode={}", pair.prefill().name(),
                        pair.decode().name(), e);
                done.ended(ProbeOutcome.FAILED, "the probe could not be sent: " + e);
            }
        }
    }

    private void ended(HealthTable.ProbePair pair, ProbeOutcome outcome, String detail) {
        for (Worker w : table.probeEnded(pair, outcome == ProbeOutcome.SUCCESS, outcome.label() + ": " + detail)) {
            results.probed(w, outcome);
        }
    }

    @Override
    public void close() {
        if (task != null) {
            task.close();
        }
    }
}
