package dev.sluice.gateway.bench;

import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.AdmissionObserver;
import dev.sluice.gateway.admission.Rejection;
import dev.sluice.gateway.admission.Ticket;
import dev.sluice.gateway.admission.TicketListener;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.routing.RoutingPolicies;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.routing.WorkerStatus;
import java.time.Instant;
import java.util.SplittableRandom;
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
 * The admission decision under contention, from 1 and 2 threads (the gateway's two request event
 * loops), beside a baseline of three bare lock round trips measured in the same run, so the
 * figures are ratios that survive a noisy machine. Three cases:
 * <ul>
 *   <li>{@code admitRelease}: one request's whole life (submit, granted at once, prefill done,
 *       release), windows wide open, round robin;</li>
 *   <li>{@code overload}: the prefill windows are full and stay full, so the queue fills up
 *       (max_queued_requests 256) and stays full: each op is one submit, rejected (queue_full) or
 *       queued until its client deadline passes, and every 16th op an expiry sweep, as the
 *       gateway's 20 ms sweep runs beside a flood. The clock is logical (1 µs per op) so the mix of
 *       rejected and expired is the same however fast the code is;</li>
 *   <li>{@code cacheAware}: the lifecycle with cache_aware prefill routing on prompts of about 8,000
 *       characters (8 system prompts, 64 conversations), the prefix key set on the ticket by the
 *       calling thread as the event loop does.</li>
 * </ul>
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

    /**
     * {@code prefills} prefill workers and two decodes; budgets out of the way but for the queue's
     * length and each prefill window's request count; {@code routing}: a {@code routing:} line or "".
     */
    static GatewayConfig config(int prefills, int maxQueued, int prefillRequests, String routing) {
        StringBuilder prefill = new StringBuilder();
        for (int i = 1; i <= prefills; i++) {
            prefill.append(i == 1 ? "" : ", ").append("{url: \"http://10.0.0.").append(i).append(":1\"}");
        }
        return ConfigLoader.parse("workers:\n  prefill: [" + prefill + "]\n"
                + "  decode: [{url: \"http://10.0.1.1:1\"}, {url: \"http://10.0.1.2:1\"}]\n" + routing
                + "admission:\n  max_queued_requests: " + maxQueued + "\n  max_pending_tokens: 100000000\n"
                + "  prefill: {max_inflight_requests: " + prefillRequests + ", max_inflight_tokens: 100000000}\n"
                + "  decode: {max_inflight_streams: 100000}\n", "bench");
    }

    @Setup
    public void setup() {
        GatewayConfig cfg = config(2, 1024, 100_000, "");
        controller = new AdmissionController(cfg.admission(), healthy(cfg), AdmissionObserver.NONE, System::nanoTime);
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
    public Rejection overload1Thread(Overload s) {
        return s.op();
    }

    @Benchmark
    @Threads(2)
    public Rejection overload2Threads(Overload s) {
        return s.op();
    }

    @Benchmark
    @Threads(1)
    public void cacheAware1Thread(CacheAware s) {
        s.lifecycle();
    }

    @Benchmark
    @Threads(2)
    public void cacheAware2Threads(CacheAware s) {
        s.lifecycle();
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

    private static WorkerSet healthy(GatewayConfig cfg) {
        WorkerSet workers = new WorkerSet(cfg.workers());
        workers.all().forEach(w -> w.status(new WorkerStatus(WorkerState.HEALTHY, "", Instant.now())));
        return workers;
    }

    /** A controller whose prefill windows are held full: the queue fills and every submit meets a full queue. */
    @State(Scope.Benchmark)
    public static class Overload {
        private static final long TICK = 1_000;
        private static final long PATIENCE = 512 * TICK; // each client waits 512 ops, twice the queue
        private final AtomicLong clock = new AtomicLong(1);
        private final AtomicLong ids = new AtomicLong();
        private AdmissionController controller;

        @Setup
        public void setup() {
            GatewayConfig cfg = config(2, 256, 1, "");
            controller = new AdmissionController(cfg.admission(), healthy(cfg), AdmissionObserver.NONE, clock::get);
            for (int i = 0; i < 2; i++) { // one request per prefill window that never finishes
                controller.submit(new Ticket("hold" + i, 1000, 1, "t", Long.MAX_VALUE, Runnable::run, IGNORE));
            }
        }

        Rejection op() {
            long now = clock.addAndGet(TICK);
            long id = ids.incrementAndGet();
            Ticket t = new Ticket("r" + id, 1000, 1, "t" + (id & 3), now + PATIENCE, Runnable::run, IGNORE);
            Rejection r = controller.submit(t);
            if ((id & 15) == 0) {
                controller.expire();
            }
            return r;
        }
    }

    /** Wide-open windows, cache_aware prefill routing over a tree warmed by the same prompts. */
    @State(Scope.Benchmark)
    public static class CacheAware {
        private final AtomicLong ids = new AtomicLong();
        private AdmissionController controller;
        private String[] keys;

        @Setup
        public void setup() {
            GatewayConfig cfg = config(4, 1024, 100_000,
                    "routing: {prefill: {policy: cache_aware}, decode: {policy: least_load}}\n");
            controller = new AdmissionController(cfg.admission(), healthy(cfg), AdmissionObserver.NONE, System::nanoTime,
                    RoutingPolicies.create(cfg.routing(), WorkerRole.PREFILL),
                    RoutingPolicies.create(cfg.routing(), WorkerRole.DECODE), (role, policy, reason) -> { },
                    1_000_000_000L);
            keys = keys(8_000);
            for (String key : keys) { // warm the tree: every prompt routed once
                lifecycle(key);
            }
        }

        /** 8 system prompts of half the length, 64 conversations of 8 turns with a growing shared history. */
        private static String[] keys(int chars) {
            String[] system = new String[8];
            for (int i = 0; i < system.length; i++) {
                system[i] = BenchBodies.text(new SplittableRandom(i), chars / 2);
            }
            SplittableRandom r = new SplittableRandom(42);
            String[] out = new String[64 * 8];
            for (int c = 0; c < 64; c++) {
                String history = BenchBodies.text(r, chars / 2);
                for (int t = 0; t < 8; t++) {
                    int shared = chars / 2 - 200 + (t * 150) % 200;
                    out[c * 8 + t] = system[c % system.length] + history.substring(0, shared) + BenchBodies.text(r, 200);
                }
            }
            return out;
        }

        void lifecycle() {
            lifecycle(keys[(int) (ids.get() % keys.length)]);
        }

        private void lifecycle(String key) {
            Ticket t = new Ticket("r" + ids.incrementAndGet(), key.length() / 4, 1, "t", Long.MAX_VALUE, Runnable::run,
                    IGNORE).prefixKey(key);
            controller.submit(t);
            controller.prefillDone(t);
            controller.release(t);
        }
    }
}
