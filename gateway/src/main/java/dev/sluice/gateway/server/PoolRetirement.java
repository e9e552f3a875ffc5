package dev.sluice.gateway.server;

import dev.sluice.gateway.admission.RejectReason;
import dev.sluice.gateway.pd.InFlight;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A model pool a reload removed, on its way out. It takes no new request already (its models no longer
 * resolve to it). Its queued and in-flight requests get the gateway's drain grace ({@code admission.drain_grace})
 * to finish; after it, what is still queued is refused and what still runs is stopped on both halves, as the
 * gateway's own drain does. Then everything the pool owned closes, in the order of the gateway's stop: its
 * periodic tasks and sources, its last save of the prefill rates (waited for), its leases and tokenizers and
 * KV event streams, the connections to its workers (unless another pool serves the same worker), and every
 * meter labelled with it. Runs on a thread of its own ({@code sluice-pool-retire}): it waits, so never on a loop.
 */
final class PoolRetirement {
    private static final Logger log = LoggerFactory.getLogger(PoolRetirement.class);
    private static final long HARD_STOP_MS = 3_000; // after the aborts: what a request needs to see them

    private final ModelPool pool;
    private final Duration grace;
    private final PoolServices shared;
    private final Consumer<ModelPool> releaseWorkers;
    private final Consumer<PoolRetirement> retired;
    private final Thread thread;

    /**
     * @param releaseWorkers closes the connections to the pool's workers that no pool still serving has (under the
     *                       reconfiguration's lock: a pool a reload adds on the same worker keeps them)
     * @param retired      told when the pool is closed (then nothing needs to hold it)
     */
    private PoolRetirement(ModelPool pool, Duration grace, PoolServices shared, Consumer<ModelPool> releaseWorkers,
                           Consumer<PoolRetirement> retired) {
        this.pool = pool;
        this.grace = grace;
        this.shared = shared;
        this.releaseWorkers = releaseWorkers;
        this.retired = retired;
        this.thread = new Thread(this::run, "sluice-pool-retire-" + pool.name);
        thread.setDaemon(true);
    }

    static PoolRetirement of(ModelPool pool, Duration grace, PoolServices shared, Consumer<ModelPool> releaseWorkers,
                             Consumer<PoolRetirement> retired) {
        return new PoolRetirement(pool, grace, shared, releaseWorkers, retired);
    }

    /** Starts the drain and the close, on the retirement's own thread. */
    void start() {
        pool.retire(); // before the thread reads the pool's in-flight set (ModelPool.retire)
        thread.start();
    }

    String pool() {
        return pool.name;
    }

    /** The gateway stops: what is left of the pool's requests is stopped now, then the pool closes. */
    void hurry() {
        thread.interrupt();
    }

    /** Waits (bounded) for the pool to be closed, after {@link #hurry}. */
    void awaitClosed(long timeoutMillis) throws InterruptedException {
        thread.join(timeoutMillis);
    }

    private void run() {
        long start = System.nanoTime();
        pool.draining(); // what this replica holds of the pool's fleet budgets goes back now
        pool.admission.drain();
        log.info("pool removed, draining pool={} queued={} in_flight={} grace_ms={}", pool.name,
                pool.admission.snapshot().queued(), pool.inFlight.size(), grace.toMillis());
        try {
            long deadline = start + grace.toNanos();
            while (System.nanoTime() < deadline && !idle()) {
                Thread.sleep(20); // this thread polls; nothing waits on it
            }
        } catch (InterruptedException e) {
            Thread.interrupted(); // the gateway stops: on to the aborts, then the close, without waiting more
        }
        if (!idle()) {
            stopWhatIsLeft();
        }
        close(pool, shared, releaseWorkers);
        retired.accept(this);
        log.info("pool retired pool={} after_ms={}", pool.name,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    }

    private boolean idle() {
        return pool.inFlight.isEmpty() && pool.admission.snapshot().idle();
    }

    private void stopWhatIsLeft() {
        log.warn("pool drain grace over pool={} rejecting queued={} aborting in_flight={}", pool.name,
                pool.admission.snapshot().queued(), pool.inFlight.size());
        String why = "the pool " + pool.name + " was removed by a configuration reload before this request ";
        pool.admission.rejectQueued(RejectReason.DRAINING, why + "was served");
        for (InFlight ex : List.copyOf(pool.inFlight)) {
            ex.abortOnDrain(why + "finished");
        }
        long hard = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(HARD_STOP_MS);
        try {
            while (!pool.inFlight.isEmpty() && System.nanoTime() < hard) {
                Thread.sleep(10);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // closing anyway; the flag is kept for the save's wait
        }
    }

    /**
     * Closes everything {@code pool} owns (also for a pool built by a reload that was then refused): see the
     * class comment for the order.
     */
    static void close(ModelPool pool, PoolServices shared, Consumer<ModelPool> releaseWorkers) {
        pool.close();
        pool.saveRatesAtStop();
        // an interrupt (the gateway stops) must not skip this wait: the leases' store closes after it
        boolean interrupted = Thread.interrupted();
        try {
            // the file IO thread runs its tasks in order: once this one ran, the last save did
            shared.loops().fileIo.submit(() -> { }).get(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            interrupted = true;
            log.warn("pool retire: last rate save not confirmed pool={} (interrupted twice)", pool.name);
        } catch (ExecutionException | TimeoutException | RejectedExecutionException e) {
            log.warn("pool retire: last rate save not confirmed pool={} detail=\"{}\"", pool.name, e.toString());
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        pool.closeAfterTasks(); // the leases' store after the save that writes through it
        releaseWorkers.accept(pool);
        int meters = shared.metrics().poolLabels().forget(shared.metrics().registry(), pool.name);
        log.info("pool closed pool={} workers={} meters_removed={}", pool.name, pool.workers.all().size(), meters);
    }
}
