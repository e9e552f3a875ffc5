package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.config;
import static dev.sluice.gateway.admission.AdmissionFixtures.workers;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.RepeatedTest;

/**
 * Many threads, random arrivals, priorities, tenants, client cancels (queued and in flight),
 * failures before the prefill is done, queue timeouts: every admitted request ends exactly once,
 * the limits hold at every observed instant, and at the end everything is back to zero.
 */
class AdmissionInvariantsRandomizedTest {
    private static final int THREADS = 6;
    private static final int REQUESTS_PER_THREAD = 400;

    @RepeatedTest(3)
    void everyRequestEndsExactlyOnceAndTheAccountingReturnsToZero() throws Exception {
        WorkerSet workers = workers(2, 2);
        AdmissionConfig cfg = config(16, 40_000, Duration.ofMillis(30), 8_000, 3, 12_000, 4);
        AtomicInteger observedRejections = new AtomicInteger();
        AdmissionController c = new AdmissionController(cfg, workers, new AdmissionObserver() {
            @Override
            public void rejected(Ticket ticket, RejectReason reason) {
                observedRejections.incrementAndGet();
            }

            @Override
            public void dispatched(Ticket ticket) {
            }
        }, System::nanoTime);
        // a client that leaves while queued, for certain: on a fast (or a very slow) run the random phase
        // below may never find the queue occupied when a client leaves
        List<Ticket> holders = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            Ticket h = new Ticket("hold-" + i, 6_000, 1, "tenant0", Long.MAX_VALUE, Runnable::run,
                    new AdmissionFixtures.Recorder());
            assertThat(c.submit(h)).isNull();
            holders.add(h);
        }
        assertThat(c.snapshot().queued()).as("two prefill windows of 12,000 tokens hold four").isEqualTo(2);
        assertThat(c.release(holders.get(5))).as("released while queued").isTrue();
        holders.forEach(c::release);
        assertThat(c.snapshot().idle()).as("back to zero: %s", c.snapshot()).isTrue();
        observedRejections.set(0);

        ExecutorService loops = Executors.newFixedThreadPool(4); // stand-ins for event loops
        ScheduledExecutorService timers = Executors.newScheduledThreadPool(2);
        timers.scheduleAtFixedRate(c::expire, 1, 1, TimeUnit.MILLISECONDS);
        List<String> violations = new CopyOnWriteArrayList<>();
        AtomicBoolean running = new AtomicBoolean(true);
        Thread checker = new Thread(() -> {
            while (running.get()) {
                AdmissionSnapshot s = c.snapshot();
                if (s.queued() > cfg.maxQueuedRequests() || s.pendingTokens() > cfg.maxPendingTokens()
                        || s.pendingTokens() < 0 || s.inflightPrefillTokens() < 0) {
                    violations.add("limits: " + s);
                }
                s.perWorker().forEach((w, v) -> {
                    if (v.prefillRequests() < 0 || v.prefillTokens() < 0 || v.streams() < 0
                            || v.prefillRequests() > cfg.prefillMaxInflightRequests()
                            || v.streams() > cfg.decodeMaxInflightStreams()) {
                        violations.add("window " + w.name() + "=" + v);
                    }
                });
            }
        });
        checker.start();

        Map<String, AtomicInteger> endings = new ConcurrentHashMap<>();
        AtomicInteger granted = new AtomicInteger();
        AtomicInteger immediate = new AtomicInteger();
        AtomicInteger later = new AtomicInteger();
        AtomicInteger cancelledQueued = new AtomicInteger();
        Thread[] clients = new Thread[THREADS];
        for (int th = 0; th < THREADS; th++) {
            int thread = th;
            clients[th] = new Thread(() -> {
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                for (int i = 0; i < REQUESTS_PER_THREAD; i++) {
                    String id = thread + "-" + i;
                    endings.put(id, new AtomicInteger());
                    Ticket[] self = new Ticket[1];
                    TicketListener listener = new TicketListener() {
                        @Override
                        public void granted(Worker p, Worker d) {
                            endings.get(id).incrementAndGet();
                            granted.incrementAndGet();
                            int fate = ThreadLocalRandom.current().nextInt(10);
                            timers.schedule(() -> {
                                if (fate < 7) {
                                    c.prefillDone(self[0]);       // first token
                                    timers.schedule(() -> c.release(self[0]), fate, TimeUnit.MILLISECONDS);
                                } else {
                                    c.release(self[0]);           // failed or client left before the first token
                                }
                            }, ThreadLocalRandom.current().nextInt(3), TimeUnit.MILLISECONDS);
                        }

                        @Override
                        public void rejected(Rejection r) {
                            endings.get(id).incrementAndGet();
                            later.incrementAndGet();
                        }
                    };
                    long deadline = rnd.nextInt(4) == 0 ? System.nanoTime() + rnd.nextLong(1_000_000, 20_000_000)
                            : Long.MAX_VALUE;
                    Ticket t = new Ticket(id, rnd.nextLong(1, 9_000), rnd.nextInt(3), "tenant" + rnd.nextInt(4),
                            deadline, loops, listener);
                    self[0] = t;
                    Rejection r = c.submit(t);
                    if (r != null) {
                        immediate.incrementAndGet();
                        endings.get(id).incrementAndGet();
                    } else if (rnd.nextInt(8) == 0) {
                        // the client leaves: at once (often still queued) or a little later (often in flight)
                        Runnable leave = () -> {
                            if (c.release(t)) {
                                cancelledQueued.incrementAndGet();
                            }
                        };
                        if (rnd.nextBoolean()) {
                            leave.run();
                        } else {
                            loops.execute(leave);
                        }
                    }
                    if (rnd.nextInt(4) == 0) {
                        Thread.onSpinWait();
                    }
                }
            });
            clients[th].start();
        }
        for (Thread t : clients) {
            t.join();
        }
        // let in-flight work finish: poll until idle (bounded)
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!c.snapshot().idle() && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        running.set(false);
        checker.join();
        timers.shutdown();
        timers.awaitTermination(5, TimeUnit.SECONDS);
        loops.shutdown();
        loops.awaitTermination(5, TimeUnit.SECONDS);

        assertThat(violations).isEmpty();
        AdmissionSnapshot end = c.snapshot();
        assertThat(end.idle()).as("accounting back to zero: %s", end).isTrue();
        assertThat(c.prefillUncachedHeld()).as("the affinity wait's measure back to zero").isZero();
        int total = THREADS * REQUESTS_PER_THREAD;
        assertThat(endings).hasSize(total);
        endings.forEach((id, n) -> assertThat(n.get()).as("endings of %s", id).isLessThanOrEqualTo(1));
        long ended = endings.values().stream().filter(n -> n.get() == 1).count();
        long silent = endings.values().stream().filter(n -> n.get() == 0).count();
        // a request with no ending is exactly one whose client left while it was queued
        assertThat(silent).isEqualTo(cancelledQueued.get());
        assertThat(ended).isEqualTo(total - cancelledQueued.get());
        assertThat(granted.get() + immediate.get() + later.get()).isEqualTo((int) ended);
        assertThat(observedRejections.get()).isEqualTo(immediate.get() + later.get());
        // the run must have exercised every path, or it proves little
        assertThat(granted.get()).isPositive();
        assertThat(immediate.get()).isPositive();
        assertThat(later.get()).isPositive();
    }
}
