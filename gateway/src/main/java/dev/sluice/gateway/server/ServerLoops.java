package dev.sluice.gateway.server;

import dev.sluice.gateway.transport.Transport;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.EventExecutor;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The gateway's threads: the accept loop, the request loops ({@code sluice-io}), the control loop
 * ({@code sluice-control}: admission's expiry sweep, health, telemetry, coordination), the admin loop
 * ({@code sluice-admin}) and one thread for blocking file IO ({@code sluice-file-io}). The groups'
 * threads start with their first task, so building them costs nothing until the server starts.
 */
final class ServerLoops {
    final int eventLoops;
    final EventLoopGroup boss;
    final EventLoopGroup requests;
    /**
     * Health checks, telemetry and admission's sweep on a loop of their own: a request loop busy with
     * thousands of streams must not make a healthy worker's /health look timed out.
     */
    final EventLoopGroup control;
    /** A slow /admin/state or /metrics scrape (or an admin reload, which reads files) must not delay the control loop. */
    final EventLoopGroup admin;
    /** Blocking file IO (the prefill rate file, the TLS files' check) off every event loop. */
    final ScheduledExecutorService fileIo;

    ServerLoops(Transport transport, int configuredThreads) {
        this.eventLoops = configuredThreads == 0 ? Runtime.getRuntime().availableProcessors() : configuredThreads;
        this.boss = transport.newGroup(1, "sluice-accept");
        this.requests = transport.newGroup(eventLoops, "sluice-io");
        this.control = transport.newGroup(1, "sluice-control");
        this.admin = transport.newGroup(1, "sluice-admin");
        this.fileIo = Executors.newSingleThreadScheduledExecutor(new DefaultThreadFactory("sluice-file-io", true));
    }

    /** Every loop that may hold upstream connections: the request loops and the control loop. */
    List<EventExecutor> upstreamLoops() {
        List<EventExecutor> loops = new ArrayList<>();
        requests.forEach(loops::add);
        control.forEach(loops::add);
        return loops;
    }

    /** Stops the file IO thread once what was given it (every pool's last save of its rates) is done. */
    void closeFileIo() {
        fileIo.shutdown();
        try {
            if (!fileIo.awaitTermination(5, TimeUnit.SECONDS)) {
                org.slf4j.LoggerFactory.getLogger(ServerLoops.class).warn("file io thread still busy at shutdown "
                        + "wait_seconds=5");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops the event loops (the file IO thread is stopped first, by {@link #closeFileIo}). */
    void close() {
        // a quiet period: closing the listener ends the exchanges in flight, which send their aborts to
        // the workers from these loops; with none, the aborts' connects complete on a loop that no longer
        // runs tasks (their requests never sent nor released: a leak report, and GPU work left running)
        requests.shutdownGracefully(100, 2_000, TimeUnit.MILLISECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        control.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        admin.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        boss.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
}
