package dev.sluice.testbed.sim;

import io.netty.channel.ChannelFuture;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kill and restart of one simulated server, as when its process dies and is started again. The
 * change runs on the server's event loop (where all its request state lives); a caller on another
 * thread waits for it, with a bound, so that the server's counters are final when it returns.
 */
final class ServerLifecycle {
    private static final Logger log = LoggerFactory.getLogger(ServerLifecycle.class);
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final SimWorker worker;

    ServerLifecycle(SimWorker worker) {
        this.worker = worker;
    }

    void kill() {
        onLoop("kill", this::killNow);
    }

    void restart() {
        onLoop("restart", this::restartNow);
    }

    boolean isRunning() {
        List<Listener> listeners = worker.listeners();
        return !listeners.isEmpty() && listeners.stream().allMatch(Listener::isOpen);
    }

    /**
     * Listeners and connections close first, so that nothing ending below reaches a client: a
     * dead process answers nobody. What was live fails (not aborted: the worker failed it).
     */
    private List<ChannelFuture> killNow() {
        List<ChannelFuture> closing = new ArrayList<>();
        boolean wasOpen = false;
        for (Listener l : worker.listeners()) {
            wasOpen |= l.isOpen();
            closing.addAll(l.close());
        }
        Set<Exchange> exchanges = new LinkedHashSet<>();
        for (SimItem item : worker.live) {
            exchanges.add(item.exchange);
        }
        for (Exchange ex : exchanges) {
            ex.dropped = true;
            ex.connectionClosed();
        }
        worker.killed();
        worker.prefixCache.clear(); // a process that died comes back with an empty cache
        worker.publishGauges();
        if (wasOpen || !exchanges.isEmpty()) {
            log.info("{} {} killed port={} failedRequests={}", worker.role(), worker.ordinal, worker.port(),
                    exchanges.size());
        }
        return closing;
    }

    private List<ChannelFuture> restartNow() {
        List<ChannelFuture> binding = new ArrayList<>();
        for (Listener l : worker.listeners()) {
            if (!l.isOpen()) {
                binding.add(l.bind(l.port()));
            }
        }
        if (!binding.isEmpty()) {
            log.info("{} {} restarting port={}", worker.role(), worker.ordinal, worker.port());
        }
        return binding;
    }

    /** On the loop: runs the task and returns. Elsewhere: waits for it and its futures, failing on error. */
    private void onLoop(String what, Supplier<List<ChannelFuture>> task) {
        EventLoop loop = worker.loop;
        if (loop.inEventLoop()) {
            task.get();
            return;
        }
        if (loop.isShuttingDown()) {
            throw new IllegalStateException(what + " " + worker + ": the cluster is closed");
        }
        long deadline = System.nanoTime() + WAIT_NANOS;
        Future<List<ChannelFuture>> submitted = loop.submit(task::get);
        List<ChannelFuture> futures = await(what, submitted, deadline) ? submitted.getNow() : List.of();
        for (ChannelFuture f : futures) {
            await(what, f, deadline);
        }
        // the closed connections' channelInactive (which cancels their timers) runs as later loop tasks
        await(what, loop.submit(() -> { }), deadline);
    }

    private boolean await(String what, Future<?> f, long deadline) {
        long left = Math.max(0, deadline - System.nanoTime());
        if (!f.awaitUninterruptibly(left, TimeUnit.NANOSECONDS)) {
            throw new IllegalStateException(what + " " + worker + ": not done within "
                    + TimeUnit.NANOSECONDS.toMillis(WAIT_NANOS) + " ms");
        }
        if (!f.isSuccess()) {
            throw new IllegalStateException(what + " " + worker + ": " + f.cause(), f.cause());
        }
        return true;
    }
}
