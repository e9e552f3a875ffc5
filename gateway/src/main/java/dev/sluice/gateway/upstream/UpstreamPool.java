package dev.sluice.gateway.upstream;

import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.transport.Transport;
import dev.sluice.gateway.tls.ClientTls;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.FastThreadLocal;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Keep-alive connections to workers, one pool per event loop and worker, so a request and all of
 * its upstream traffic stay on the client's event loop and the pool needs no locks. Bounded: past
 * {@code maxConnectionsPerWorker} a caller waits (up to the connect timeout) for a released one.
 */
public final class UpstreamPool {
    static final AttributeKey<LoopPool> POOL = AttributeKey.valueOf("sluice.pool");
    /** Set once a connection has carried a request: a later close before any answer is the keep-alive race. */
    static final AttributeKey<Boolean> SERVED = AttributeKey.valueOf("sluice.served");

    private final Transport transport;
    private final Duration connectTimeout;
    private final int maxConnectionsPerWorker;
    private final Duration idleTimeout;
    private final ClientTls tls; // for https:// workers
    private final AtomicInteger openConnections = new AtomicInteger();
    private final FastThreadLocal<Map<String, LoopPool>> pools = new FastThreadLocal<>() {
        @Override
        protected Map<String, LoopPool> initialValue() {
            return new HashMap<>();
        }
    };

    public UpstreamPool(Transport transport, Duration connectTimeout, int maxConnectionsPerWorker, Duration idleTimeout) {
        this(transport, connectTimeout, maxConnectionsPerWorker, idleTimeout, null);
    }

    public UpstreamPool(Transport transport, Duration connectTimeout, int maxConnectionsPerWorker, Duration idleTimeout,
                        ClientTls tls) {
        this.transport = transport;
        this.connectTimeout = connectTimeout;
        this.maxConnectionsPerWorker = maxConnectionsPerWorker;
        this.idleTimeout = idleTimeout;
        this.tls = tls;
    }

    /** Open upstream connections, all loops together (a gauge). */
    public int openConnections() {
        return openConnections.get();
    }

    /** Must be called on {@code loop}. The returned channel is exclusively the caller's until {@link #release}. */
    public Future<Channel> acquire(EventLoop loop, Worker worker) {
        assert loop.inEventLoop();
        LoopPool pool = pools.get().computeIfAbsent(worker.name(), k -> new LoopPool(loop, worker));
        return pool.acquire();
    }

    /**
     * Forgets a worker a reload removed, once it drained: on each event loop its idle connections
     * are closed and its pool dropped (a connection still in use closes when its call ends, as it
     * is no longer pooled).
     */
    public void forget(Worker worker, Iterable<io.netty.util.concurrent.EventExecutor> loops) {
        for (io.netty.util.concurrent.EventExecutor loop : loops) {
            loop.execute(() -> {
                LoopPool p = pools.get().remove(worker.name());
                if (p != null) {
                    p.closeIdle();
                }
            });
        }
    }

    /**
     * {@code channel}, reused from the pool, was found closed by its worker before any response byte (the
     * keep-alive race): the connections idle beside it on its loop were idle at least as long (the idle
     * list is last in, first out) and are likely closed too, so they are dropped and a retry connects
     * anew instead of meeting the same race again. Must be called on the channel's loop.
     */
    static void staleSeen(Channel channel) {
        LoopPool p = channel.attr(POOL).get();
        if (p != null) {
            p.dropIdle();
        }
    }

    /** An idle pooled connection to {@code worker}, taken, or null (then {@link #acquire}). Must be called on {@code loop}. */
    public Channel pollIdle(EventLoop loop, Worker worker) {
        LoopPool pool = pools.get().get(worker.name());
        return pool == null ? null : pool.pollIdle();
    }

    /** Gives a channel back; it is pooled only when {@code reusable} (a complete, keep-alive exchange). */
    public static void release(Channel channel, boolean reusable) {
        LoopPool pool = channel.attr(POOL).get();
        if (pool == null || !reusable || !channel.isActive()) {
            channel.close();
            return;
        }
        pool.offer(channel);
    }

    /** Connections towards one worker from one event loop. Touched only on that loop. */
    final class LoopPool {
        private final EventLoop loop;
        private final Worker worker;
        private final ArrayDeque<Channel> idle = new ArrayDeque<>();
        private final ArrayDeque<Promise<Channel>> waiters = new ArrayDeque<>();
        private int open;

        LoopPool(EventLoop loop, Worker worker) {
            this.loop = loop;
            this.worker = worker;
        }

        Channel pollIdle() {
            Channel ch;
            while ((ch = idle.pollFirst()) != null) {
                if (ch.isActive()) {
                    return ch;
                }
            }
            return null;
        }

        Future<Channel> acquire() {
            Promise<Channel> promise = loop.newPromise();
            Channel ch;
            while ((ch = idle.pollFirst()) != null) {
                if (ch.isActive()) {
                    promise.setSuccess(ch);
                    return promise;
                }
            }
            if (open < maxConnectionsPerWorker) {
                connect(promise);
            } else {
                waiters.addLast(promise);
                ScheduledFuture<?> timer = loop.schedule(() -> {
                    if (waiters.remove(promise)) {
                        promise.tryFailure(new UpstreamConnectException("no free connection to " + worker.name()
                                + " within " + connectTimeout.toMillis() + " ms (upstream.max_connections_per_worker="
                                + maxConnectionsPerWorker + ")"));
                    }
                }, connectTimeout.toMillis(), TimeUnit.MILLISECONDS);
                promise.addListener(f -> timer.cancel(false));
            }
            return promise;
        }

        private void connect(Promise<Channel> promise) {
            open++;
            openConnections.incrementAndGet();
            Bootstrap b = new Bootstrap()
                    .group(loop)
                    .channel(transport.socketChannel())
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, connectTimeout.toMillis()))
                    .option(ChannelOption.TCP_NODELAY, true)
                    // bounded like the client side: a paused stream holds at most this much in the kernel
                    .option(ChannelOption.SO_RCVBUF, 128 * 1024)
                    .handler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            if (worker.tls()) {
                                if (tls == null) {
                                    throw new IllegalStateException("https:// worker " + worker.name()
                                            + " without a TLS client context");
                                }
                                ch.pipeline().addLast("tls", tls.newHandler(ch.alloc(), worker.host(), worker.port()));
                            }
                            ch.pipeline()
                                    .addLast("idle", new IdleStateHandler(0, 0, idleTimeout.toMillis(), TimeUnit.MILLISECONDS))
                                    .addLast("codec", new HttpClientCodec())
                                    .addLast("upstream", new UpstreamHandler());
                        }
                    });
            ChannelFuture cf = b.connect(worker.host(), worker.port());
            Channel ch = cf.channel();
            ch.attr(POOL).set(this);
            ch.closeFuture().addListener(f -> {
                open--;
                openConnections.decrementAndGet();
                idle.remove(ch);
                // a slot freed: a waiter may now open its own connection
                Promise<Channel> w = waiters.pollFirst();
                if (w != null) {
                    connect(w);
                }
            });
            cf.addListener(f -> {
                if (f.isSuccess()) {
                    if (!promise.trySuccess(ch)) {
                        offer(ch);
                    }
                } else {
                    promise.tryFailure(new UpstreamConnectException("cannot connect to " + worker.name() + ": "
                            + f.cause()));
                }
            });
        }

        private boolean forgotten;

        void closeIdle() {
            forgotten = true;
            dropIdle();
        }

        /** Closes the idle connections (the pool keeps serving: the next acquire connects anew). */
        void dropIdle() {
            Channel ch;
            while ((ch = idle.pollFirst()) != null) {
                ch.close();
            }
        }

        void offer(Channel ch) {
            if (forgotten) {
                ch.close();
                return;
            }
            ch.config().setAutoRead(true);
            Promise<Channel> w;
            while ((w = waiters.pollFirst()) != null) {
                if (w.trySuccess(ch)) {
                    return;
                }
            }
            idle.addFirst(ch);
        }
    }
}
