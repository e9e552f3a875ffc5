package dev.sluice.gateway.pd;

import dev.sluice.gateway.admission.PrefillCalibrationTarget;
import dev.sluice.gateway.api.ApiException;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.background.BackgroundTasks;
import dev.sluice.gateway.background.PeriodicTask;
import dev.sluice.gateway.config.PrefillCalibrationConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import io.netty.channel.EventLoop;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

/**
 * The calibration of the prefill rates ({@code admission.prefill_rate.calibration}): each prefill (or
 * unified) worker that joins with no trusted rate is timed by the gateway's own requests
 * ({@link PrefillCalibration}) as soon as it is available (and, in PD, a decode is), so that the first
 * burst is judged on evidence rather than on the work-in-flight bound alone. Readiness waits for the
 * calibration of the workers present at start ({@link #settled}), at most {@code timeout} after the
 * start; a worker found later (discovery, a reload) is calibrated when it becomes available, alongside
 * client traffic (a calibration that client prompts would slow is given up). One worker at a time per
 * worker, any number of workers at once; a worker is calibrated once per start (a failure is logged and
 * left: the worker's rate is then learnt from client prefills, as without calibration). Runs on one
 * event loop (the control loop); {@link #settled} from any thread.
 */
public final class PrefillCalibrations implements AutoCloseable {
    private static final Duration ROUND = Duration.ofMillis(100);

    private final OwnRequestServices own;
    private final EventLoop loop;
    private final WorkerSet workers;
    private final PrefillCalibrationTarget target;
    private final Supplier<PrefillCalibrationConfig> config;
    private final DoubleSupplier bytesPerToken;
    private final BackgroundTasks tasks;
    // a seed of its own each start: no prompt of this run shares a prefix with an earlier run's
    private final CalibrationPrompts prompts = new CalibrationPrompts(new SecureRandom().nextLong());
    private final Map<Worker, PrefillCalibration> running = new HashMap<>();
    private final Set<Worker> done = new HashSet<>(); // calibrated, failed, or not wanted: not tried again
    private List<Worker> atStart = List.of();
    private long startNanos;
    private volatile boolean settled;
    private PeriodicTask task;

    public PrefillCalibrations(OwnRequestServices own, WorkerSet workers, PrefillCalibrationTarget target,
                               Supplier<PrefillCalibrationConfig> config, DoubleSupplier bytesPerToken,
                               BackgroundTasks tasks) {
        this.own = own;
        this.loop = own.loop();
        this.workers = workers;
        this.target = target;
        this.config = config;
        this.bytesPerToken = bytesPerToken;
        this.tasks = tasks;
    }

    /** From now on, workers are calibrated as they become available; readiness waits for those present now. */
    public void start() {
        if (config.get().onStart() == PrefillCalibrationConfig.OnStart.NEVER) {
            settled = true; // as before: nothing to wait for (a reload that turns it on calibrates newcomers only)
        }
        loop.execute(() -> {
            startNanos = System.nanoTime();
            atStart = List.copyOf(workers.prefill());
        });
        task = tasks.every("prefill_calibration", loop, ROUND, this::round);
    }

    /**
     * Whether readiness has nothing more to wait for: every worker present at start was calibrated, given
     * up, not wanted, or found unavailable after its first health check; or {@code timeout} passed.
     */
    public boolean settled() {
        return settled;
    }

    /** Readiness waits for nothing here (a pool a reload added: its calibrations run alongside its traffic). */
    public void noWait() {
        settled = true;
    }

    /** One pass (on the loop): starts the calibrations that can start, then re-judges {@link #settled}. */
    void round() {
        PrefillCalibrationConfig c = config.get();
        for (Worker w : workers.prefill()) {
            if (done.contains(w) || running.containsKey(w)) {
                continue;
            }
            if (!target.wants(w, c.onStart())) {
                if (!w.status().awaitingFirstCheck()) {
                    done.add(w); // a trusted rate (or calibration off): nothing to do for it in this run
                }
                continue;
            }
            Worker decode = workers.unified() ? w : partner();
            if (w.acceptsNewRequests() && decode != null) {
                start(w, decode, c);
            }
        }
        if (!settled) {
            boolean all = atStart.stream().allMatch(w -> done.contains(w) || !workers.prefill().contains(w)
                    || (!running.containsKey(w) && !w.status().awaitingFirstCheck() && !w.acceptsNewRequests()));
            if (all || System.nanoTime() - startNanos > c.timeout().toNanos()) {
                settled = true;
            }
        }
    }

    private Worker partner() {
        for (Worker d : workers.decode()) {
            if (d.acceptsNewRequests()) {
                return d;
            }
        }
        return null;
    }

    private void start(Worker w, Worker decode, PrefillCalibrationConfig c) {
        AttemptServices services = own.attemptServices(own.settings().get());
        PrefillCalibration.Sender sender = (request, p, d, result) -> {
            CalibrationRequest r = new CalibrationRequest(own.settings().get().drivers(), services, loop, request, p,
                    d, result);
            r.send();
            return r;
        };
        PrefillCalibration calibration = new PrefillCalibration(w, decode, loop, target, this::request, sender,
                prompts, c.promptTokens(), bytesPerToken.getAsDouble(), outcome -> {
                    running.remove(w);
                    done.add(w);
                });
        running.put(w, calibration);
        calibration.start(c.timeout());
    }

    private GenerationRequest request(String prompt) {
        try {
            return CalibrationPrompts.request(own.model(), prompt);
        } catch (ApiException e) {
            return null;
        }
    }

    /** Stops the pass and every calibration in flight (their requests are aborted on the workers). */
    @Override
    public void close() {
        if (task != null) {
            task.close();
        }
        if (!loop.isShuttingDown()) {
            loop.execute(() -> {
                List.copyOf(running.values()).forEach(PrefillCalibration::close);
                running.clear();
            });
        }
    }
}
