package dev.sluice.gateway.bench;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.AdmissionObserver;
import dev.sluice.gateway.admission.Rejection;
import dev.sluice.gateway.admission.Ticket;
import dev.sluice.gateway.admission.TicketListener;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The admission decision under contention: one request's whole life in the controller (submit,
 * granted at once, prefill done, release), from 1 and 2 threads, beside a baseline of the same
 * number of bare lock round trips, so the figure is a ratio that survives a noisy machine.
 * Run: {@code scripts/bench-admission}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class AdmissionBenchmark {
    private static final TicketListener IGNORE = new TicketListener() {
        @Override
        public void granted(Worker prefill, Worker decode) {
        }

        @Override
        public void rejected(Rejection rejection) {
        }
    };

    private AdmissionController controller;
    private final ReentrantLock baselineLock = new ReentrantLock();
    private final AtomicLong ids = new AtomicLong();
    private long baselineState;

    @Setup
    public void setup() {
        GatewayConfig cfg = ConfigLoader.parse("""
                workers:
                  prefill: [{url: "http://10.0.0.1:1"}, {url: "http://10.0.0.2:1"}]
                  decode: [{url: "http://10.0.1.1:1"}, {url: "http://10.0.1.2:1"}]
                admission:
                  max_queued_requests: 1024
                  max_pending_tokens: 100000000
                  prefill: { max_inflight_requests: 100000, max_inflight_tokens: 100000000 }
                  decode: { max_inflight_streams: 100000 }
                """, "bench");
        WorkerSet workers = new WorkerSet(cfg.workers());
        workers.all().forEach(w -> w.status(new dev.sluice.gateway.routing.WorkerStatus(dev.sluice.gateway.routing.WorkerState.HEALTHY, "", java.time.Instant.now())));
        controller = new AdmissionController(cfg.admission(), workers, AdmissionObserver.NONE, System::nanoTime);
    }

    private void lifecycle() {
        Ticket t = new Ticket("r" + ids.incrementAndGet(), 1000, 1, "t", Long.MAX_VALUE, Runnable::run, IGNORE);
        controller.submit(t);
        controller.prefillDone(t);
        controller.release(t);
    }

    /** Three lock round trips with a little state: what the controller's three calls cost at the least. */
    private void baseline() {
        for (int i = 0; i < 3; i++) {
            baselineLock.lock();
            try {
                baselineState += i;
            } finally {
                baselineLock.unlock();
            }
        }
    }

    @Benchmark
    @Threads(1)
    public void admitRelease1Thread() {
        lifecycle();
    }

    @Benchmark
    @Threads(2)
    public void admitRelease2Threads() {
        lifecycle();
    }

    @Benchmark
    @Threads(1)
    public void baselineLock1Thread() {
        baseline();
    }

    @Benchmark
    @Threads(2)
    public void baselineLock2Threads() {
        baseline();
    }
}
