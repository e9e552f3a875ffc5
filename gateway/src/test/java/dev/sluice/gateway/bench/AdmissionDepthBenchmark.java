package dev.sluice.gateway.bench;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.AdmissionObserver;
import dev.sluice.gateway.admission.QueueWatch;
import dev.sluice.gateway.admission.Rejection;
import dev.sluice.gateway.admission.Ticket;
import dev.sluice.gateway.admission.TicketListener;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.routing.WorkerStatus;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One admission decision at a queue depth of 32, 1,000 and 10,000, from 1 and 8 threads: the
 * prefill windows are held full, so every newcomer is queued among {@code depth} others (of class
 * {@code normal}) and judged against its deadline at a known prefill rate (a configured prior: the
 * deadline checks are on from the first request), then its client leaves (release). The queue's
 * depth stays where it was. The clock stands still, so nothing expires and every op meets the same
 * queue. Three newcomers: {@code last} (of class {@code normal}: served after all the queued),
 * {@code ahead} (of class {@code high}: served before all of them, so their fate is open too), and
 * {@code report} (as {@code last}, asking for queue updates: its first report, where it stands).
 * The goal: the cost flat (within 2x) from 32 to 10,000. Run: {@code scripts/bench-jmh AdmissionDepth}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class AdmissionDepthBenchmark {
    private static final TicketListener IGNORE = new TicketListener() {
        @Override
        public void granted(Worker prefill, Worker decode) {
        }

        @Override
        public void rejected(Rejection rejection) {
        }
    };
    private static final long NOW = 1_000_000_000L;

    @Param({"32", "1000", "10000"})
    public int depth;

    @Param({"last", "ahead", "report"})
    public String newcomer;

    private static final QueueWatch WATCH = (ahead, etaMillis) -> {
    };

    private AdmissionController controller;
    private final AtomicLong ids = new AtomicLong();

    @Setup(Level.Trial)
    public void setup() {
        // two prefill workers at 8,000 tokens/s each; 10,000 queued prompts of 1,000 tokens are 625 s of work,
        // inside the hour a request without its own deadline may wait
        GatewayConfig cfg = ConfigLoader.parse("""
                workers:
                  prefill: [{url: "http://10.0.0.1:1"}, {url: "http://10.0.0.2:1"}]
                  decode: [{url: "http://10.0.1.1:1"}, {url: "http://10.0.1.2:1"}]
                admission:
                  max_queued_requests: 20000
                  max_pending_tokens: 100000000
                  queue_timeout: 3600s
                  prefill: {max_inflight_requests: 1, max_inflight_tokens: 100000000}
                  decode: {max_inflight_streams: 100000}
                  prefill_rate: {prior_tokens_per_second: 8000}
                """, "bench");
        WorkerSet workers = new WorkerSet(cfg.workers());
        workers.all().forEach(w -> w.status(new WorkerStatus(WorkerState.HEALTHY, "", Instant.now())));
        controller = new AdmissionController(cfg.admission(), workers, AdmissionObserver.NONE, () -> NOW);
        for (int i = 0; i < 2 + depth; i++) { // one per prefill window (never done), then the queue
            Rejection r = controller.submit(ticket());
            if (r != null) {
                throw new IllegalStateException("setup refused at " + i + ": " + r);
            }
        }
        if (controller.snapshot().queued() != depth) {
            throw new IllegalStateException("queued " + controller.snapshot().queued() + ", expected " + depth);
        }
    }

    private Ticket ticket() {
        return ticket(1);
    }

    private Ticket ticket(int priority) {
        return new Ticket("r" + ids.incrementAndGet(), 1000, priority, "t", Long.MAX_VALUE, Runnable::run, IGNORE);
    }

    /** Submit (queued at its place, judged against its deadline, maybe told where it stands), then its client leaves. */
    private boolean decide() {
        Ticket t = switch (newcomer) {
            case "ahead" -> ticket(0);
            case "report" -> ticket(1).watch(WATCH);
            default -> ticket(1);
        };
        Rejection r = controller.submit(t);
        return r == null && controller.release(t);
    }

    @Benchmark
    @Threads(1)
    public boolean decision1Thread() {
        return decide();
    }

    @Benchmark
    @Threads(8)
    public boolean decision8Threads() {
        return decide();
    }
}
