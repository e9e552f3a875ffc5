package dev.sluice.gateway.server;

import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.health.HealthProber;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.pd.AbortSender;
import dev.sluice.gateway.pd.PdContext;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerKeepAliveHandler;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running gateway: the client listener, its pipeline, and the parts every request uses
 * (workers, upstream pool, aborts, metrics, health probes). {@link #start} binds; {@link #close}
 * stops everything.
 */
public final class GatewayServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(GatewayServer.class);
    // Armeria's values: enough to keep a stream flowing, small enough that a slow client costs little
    private static final WriteBufferWaterMark CLIENT_WATERMARK = new WriteBufferWaterMark(64 * 1024, 128 * 1024);

    private final GatewayConfig config;
    private final Transport transport = Transport.best();
    private final GatewayMetrics metrics = new GatewayMetrics();
    private final WorkerSet workers;
    private final UpstreamPool pool;
    private final PdContext pdContext;
    private final ChannelGroup clientChannels = new DefaultChannelGroup("clients", GlobalEventExecutor.INSTANCE);
    private EventLoopGroup bossGroup;
    private EventLoopGroup workerGroup;
    private HealthProber prober;
    private Channel listener;

    public GatewayServer(GatewayConfig config) {
        this.config = config;
        this.workers = new WorkerSet(config.workers());
        this.pool = new UpstreamPool(transport, config.timeouts().connect(), config.upstream().maxConnectionsPerWorker(),
                config.upstream().idleTimeout());
        AbortSender aborts = new AbortSender(pool, metrics, config.timeouts().abort());
        this.pdContext = new PdContext(workers, pool, aborts, metrics, config.timeouts(),
                config.http().maxResponseBodyBytes());
        metrics.bindWorkers(workers);
        metrics.gauge("sluice.upstream.connections", "open connections from the gateway to workers", pool::openConnections);
        metrics.gauge("sluice.client.connections", "open client connections", clientChannels::size);
    }

    public GatewayServer start() throws InterruptedException {
        int threads = config.http().eventLoopThreads() == 0 ? Runtime.getRuntime().availableProcessors()
                : config.http().eventLoopThreads();
        bossGroup = transport.newGroup(1, "sluice-accept");
        workerGroup = transport.newGroup(threads, "sluice-io");
        int maxBody = (int) Math.min(Integer.MAX_VALUE, config.http().maxRequestBodyBytes());
        ServerBootstrap b = new ServerBootstrap()
                .group(bossGroup, workerGroup)
                .channel(transport.serverChannel())
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, CLIENT_WATERMARK)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        clientChannels.add(ch);
                        ch.pipeline()
                                .addLast("flush", new FlushConsolidationHandler(256, true))
                                .addLast("codec", new HttpServerCodec())
                                .addLast("keepalive", new HttpServerKeepAliveHandler())
                                .addLast("aggregator", new BodyLimitAggregator(maxBody, metrics))
                                .addLast("front", new FrontHandler(GatewayServer.this));
                    }
                });
        // bind is the one blocking step, done once at startup on the caller's thread, never on a loop
        listener = b.bind(config.listen().host(), config.listen().port()).sync().channel();
        prober = new HealthProber(workers, pool, workerGroup.next(), config.health());
        prober.start();
        log.info("gateway listening address={} transport={} event_loops={} prefill={} decode={} mode={}",
                listener.localAddress(), transport.name(), threads, workers.prefill().size(), workers.decode().size(),
                config.disaggregation().name().toLowerCase());
        return this;
    }

    /** The bound port (useful with {@code listen.port: 0}). */
    public int port() {
        return ((InetSocketAddress) listener.localAddress()).getPort();
    }

    public GatewayConfig config() {
        return config;
    }

    public GatewayMetrics metrics() {
        return metrics;
    }

    public WorkerSet workers() {
        return workers;
    }

    public UpstreamPool pool() {
        return pool;
    }

    PdContext pdContext() {
        return pdContext;
    }

    /** Waits (bounded) until the first health round marked workers of both roles usable. */
    public boolean awaitReady(long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        while (!workers.ready()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(10);
        }
        return true;
    }

    @Override
    public void close() {
        if (prober != null) {
            prober.close();
        }
        if (listener != null) {
            listener.close().syncUninterruptibly();
        }
        clientChannels.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        if (workerGroup != null) {
            workerGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        }
        if (bossGroup != null) {
            bossGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        }
        metrics.close();
        log.info("gateway stopped");
    }
}
