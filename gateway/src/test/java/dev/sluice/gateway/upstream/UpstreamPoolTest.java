package dev.sluice.gateway.upstream;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.transport.Transport;
import dev.sluice.testbed.testing.Poll;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.Future;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The upstream pool against a real loopback server and real event loops: one pool per loop and
 * worker, idle reuse, the per-worker bound and its waiters, idle closing, non-reusable releases, and
 * the open-connection gauge back to zero.
 */
class UpstreamPoolTest {
    private static final Duration WAIT = Duration.ofSeconds(5);
    private final Transport transport = Transport.best();
    private EventLoopGroup clientLoops;
    private EventLoop loopA;
    private EventLoop loopB;
    private Backend backend;
    private Worker worker;
    private UpstreamPool pool;
    /** Every channel a test acquired: closed at the end, so the gauge must come back to zero. */
    private final List<Channel> acquired = new ArrayList<>();

    /** A TCP server that accepts and counts connections and never answers on its own. */
    private static final class Backend implements AutoCloseable {
        final EventLoopGroup group;
        final Channel server;
        final AtomicInteger accepted = new AtomicInteger();
        final Set<Channel> open = ConcurrentHashMap.newKeySet();

        Backend(Transport transport) throws InterruptedException {
            group = transport.newGroup(1, "pool-test-backend");
            server = new ServerBootstrap().group(group).channel(transport.serverChannel())
                    .childHandler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            accepted.incrementAndGet();
                            open.add(ch);
                            ch.closeFuture().addListener(f -> open.remove(ch));
                        }
                    })
                    .bind("127.0.0.1", 0).sync().channel();
        }

        int port() {
            return ((InetSocketAddress) server.localAddress()).getPort();
        }

        @Override
        public void close() {
            server.close().syncUninterruptibly();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @BeforeEach
    void start() throws Exception {
        clientLoops = transport.newGroup(2, "pool-test-client");
        loopA = (EventLoop) clientLoops.next();
        loopB = (EventLoop) clientLoops.next();
        assertThat(loopA).as("two distinct loops").isNotSameAs(loopB);
        backend = new Backend(transport);
        worker = worker(backend.port());
    }

    @AfterEach
    void stop() throws Exception {
        try {
            for (Channel ch : acquired) {
                ch.close();
            }
            if (pool != null) {
                assertThat(Poll.eventually(WAIT, () -> pool.openConnections() == 0))
                        .as("open-connection gauge back to zero").isTrue();
            }
            assertThat(Poll.eventually(WAIT, backend.open::isEmpty)).as("the server saw every close").isTrue();
        } finally {
            backend.close();
            clientLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    private static Worker worker(int port) {
        return new Worker(WorkerRole.DECODE, new WorkerEndpoint("http://127.0.0.1:" + port, "127.0.0.1", port, null));
    }

    private UpstreamPool pool(int maxPerWorker, Duration connectTimeout, Duration idleTimeout) {
        pool = new UpstreamPool(transport, connectTimeout, maxPerWorker, idleTimeout);
        return pool;
    }

    /** {@link UpstreamPool#acquire} on its loop, as the gateway calls it; the future is not awaited. */
    private Future<Channel> acquireAsync(EventLoop loop) throws Exception {
        return loop.submit(() -> pool.acquire(loop, worker)).get(5, TimeUnit.SECONDS);
    }

    private Channel acquire(EventLoop loop) throws Exception {
        Channel ch = acquireAsync(loop).get(5, TimeUnit.SECONDS);
        acquired.add(ch);
        return ch;
    }

    private void release(Channel ch, boolean reusable) throws Exception {
        ch.eventLoop().submit(() -> UpstreamPool.release(ch, reusable)).get(5, TimeUnit.SECONDS);
    }

    /** The server counts a connection when its own loop accepts it, a moment after the client connected. */
    private void assertAccepted(int connections) throws InterruptedException {
        Poll.eventually(WAIT, () -> backend.accepted.get() >= connections);
        assertThat(backend.accepted.get()).as("connections the server accepted").isEqualTo(connections);
    }

    private Channel pollIdle(EventLoop loop) throws Exception {
        return loop.submit(() -> pool.pollIdle(loop, worker)).get(5, TimeUnit.SECONDS);
    }

    @Test
    void aReleasedKeepAliveConnectionIsReusedOnItsLoop() throws Exception {
        pool(4, WAIT, Duration.ofMinutes(1));
        Channel first = acquire(loopA);
        assertThat(first.isActive()).isTrue();
        assertThat(first.eventLoop()).as("connected on the caller's loop").isSameAs(loopA);
        assertThat(pollIdle(loopA)).as("a held connection is not idle").isNull();

        release(first, true);
        Channel second = acquire(loopA);

        assertThat(second).isSameAs(first);
        assertAccepted(1);
        assertThat(pool.openConnections()).isEqualTo(1);
        release(second, true);
        assertThat(pollIdle(loopA)).as("pollIdle takes the idle one").isSameAs(first);
        assertThat(pollIdle(loopA)).as("and only once").isNull();
    }

    @Test
    void eachEventLoopHasItsOwnPool() throws Exception {
        pool(4, WAIT, Duration.ofMinutes(1));
        Channel onA = acquire(loopA);
        release(onA, true);

        Channel onB = acquire(loopB);

        assertThat(onB).as("loop B never takes loop A's idle connection").isNotSameAs(onA);
        assertThat(onB.eventLoop()).isSameAs(loopB);
        assertAccepted(2);
        assertThat(pool.openConnections()).as("the gauge counts all loops").isEqualTo(2);
        assertThat(pollIdle(loopB)).isNull();
        assertThat(pollIdle(loopA)).isSameAs(onA);
    }

    @Test
    void pastTheMaximumACallerWaitsForAReleasedOrClosedConnection() throws Exception {
        pool(2, WAIT, Duration.ofMinutes(1));
        Channel c1 = acquire(loopA);
        Channel c2 = acquire(loopA);
        Future<Channel> third = acquireAsync(loopA);
        assertThat(third.isDone()).as("both connections are taken").isFalse();
        assertAccepted(2);

        release(c1, true);
        assertThat(third.get(5, TimeUnit.SECONDS)).as("handed the released one").isSameAs(c1);
        assertAccepted(2);

        Future<Channel> fourth = acquireAsync(loopA);
        assertThat(fourth.isDone()).isFalse();
        release(c2, false); // closed: its slot frees, and the waiter connects anew
        Channel fresh = fourth.get(5, TimeUnit.SECONDS);
        acquired.add(fresh);
        assertThat(fresh).isNotSameAs(c1).isNotSameAs(c2);
        assertThat(fresh.isActive()).isTrue();
        assertAccepted(3);
        assertThat(Poll.eventually(WAIT, () -> pool.openConnections() == 2)).isTrue();
    }

    @Test
    void aWaiterGivesUpAfterTheConnectTimeout() throws Exception {
        pool(1, Duration.ofMillis(300), Duration.ofMinutes(1));
        Channel only = acquire(loopA);
        Future<Channel> waiter = acquireAsync(loopA);

        assertThat(waiter.await(5, TimeUnit.SECONDS)).isTrue();

        assertThat(waiter.isSuccess()).isFalse();
        assertThat(waiter.cause()).isInstanceOf(UpstreamConnectException.class)
                .hasMessageContaining("no free connection to " + worker.name())
                .hasMessageContaining("upstream.max_connections_per_worker=1");
        release(only, true);
        assertThat(pollIdle(loopA)).as("the timed-out waiter took nothing").isSameAs(only);
    }

    @Test
    void anIdleConnectionIsClosedAfterTheIdleTimeout() throws Exception {
        pool(4, WAIT, Duration.ofMillis(200));
        Channel ch = acquire(loopA);
        release(ch, true);

        assertThat(Poll.eventually(WAIT, () -> !ch.isActive() && pool.openConnections() == 0)).isTrue();
        assertThat(Poll.eventually(WAIT, backend.open::isEmpty)).isTrue();
        assertThat(pollIdle(loopA)).isNull();

        Channel next = acquire(loopA);
        assertThat(next).isNotSameAs(ch);
        assertAccepted(2);
    }

    @Test
    void aNonReusableReleaseClosesTheConnectionAndTheGaugeReturnsToZero() throws Exception {
        pool(4, WAIT, Duration.ofMinutes(1));
        List<Channel> chs = List.of(acquire(loopA), acquire(loopA), acquire(loopB));
        assertThat(pool.openConnections()).isEqualTo(3);

        for (Channel ch : chs) {
            release(ch, false);
        }

        assertThat(Poll.eventually(WAIT, () -> pool.openConnections() == 0)).isTrue();
        assertThat(Poll.eventually(WAIT, backend.open::isEmpty)).isTrue();
        assertThat(chs).noneMatch(Channel::isActive);
        assertThat(pollIdle(loopA)).isNull();
        assertThat(pollIdle(loopB)).isNull();
    }

    @Test
    void aStaleConnectionSeenDropsTheConnectionsIdleBesideIt() throws Exception {
        pool(4, WAIT, Duration.ofMinutes(1));
        Channel a = acquire(loopA);
        Channel b = acquire(loopA);
        Channel c = acquire(loopA);
        Channel other = acquire(loopB);
        release(b, true);
        release(c, true);
        release(other, true);

        loopA.submit(() -> UpstreamPool.staleSeen(a)).get(5, TimeUnit.SECONDS);

        assertThat(pollIdle(loopA)).as("the idle siblings on its loop are gone").isNull();
        assertThat(Poll.eventually(WAIT, () -> !b.isActive() && !c.isActive())).isTrue();
        assertThat(pollIdle(loopB)).as("another loop's pool is its own").isSameAs(other);
        release(other, true);
        Channel next = acquire(loopA);
        assertThat(next).as("the pool still serves, with a new connection").isNotIn(a, b, c);
        assertAccepted(5);
    }

    @Test
    void aConnectionTheWorkerClosedIsNotPooledEvenIfReleasedAsReusable() throws Exception {
        pool(4, WAIT, Duration.ofMinutes(1));
        Channel ch = acquire(loopA);
        assertThat(Poll.eventually(WAIT, () -> backend.open.size() == 1)).isTrue();
        backend.open.iterator().next().close();
        assertThat(Poll.eventually(WAIT, () -> !ch.isActive())).isTrue();

        release(ch, true);

        assertThat(pollIdle(loopA)).isNull();
        Channel next = acquire(loopA);
        assertThat(next).isNotSameAs(ch);
        assertThat(Poll.eventually(WAIT, () -> pool.openConnections() == 1)).isTrue();
    }

    @Test
    void bytesOnAnIdlePooledConnectionCloseIt() throws Exception {
        pool(4, WAIT, Duration.ofMinutes(1));
        Channel ch = acquire(loopA);
        release(ch, true);
        assertThat(Poll.eventually(WAIT, () -> backend.open.size() == 1)).isTrue();

        // nobody owns the connection: an unexpected answer leaves it in an unknown state
        backend.open.iterator().next().writeAndFlush(Unpooled.copiedBuffer(
                "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", StandardCharsets.US_ASCII));

        assertThat(Poll.eventually(WAIT, () -> !ch.isActive() && pool.openConnections() == 0)).isTrue();
        assertThat(pollIdle(loopA)).isNull();
    }

    @Test
    void aRefusedConnectFailsTheAcquireAndFreesItsSlot() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort(); // closed below: nothing listens there
        }
        worker = worker(closedPort);
        pool(1, WAIT, Duration.ofMinutes(1));

        Future<Channel> first = acquireAsync(loopA);
        assertThat(first.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(first.cause()).isInstanceOf(UpstreamConnectException.class)
                .hasMessageContaining("cannot connect to " + worker.name());
        assertThat(Poll.eventually(WAIT, () -> pool.openConnections() == 0)).isTrue();

        Future<Channel> second = acquireAsync(loopA);
        assertThat(second.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(second.cause()).as("tries again instead of waiting for the failed slot")
                .isInstanceOf(UpstreamConnectException.class).hasMessageContaining("cannot connect");
    }

    @Test
    void forgetClosesIdleConnectionsAndThoseReleasedLater() throws Exception {
        pool(4, WAIT, Duration.ofMinutes(1));
        Channel idle = acquire(loopA);
        Channel busy = acquire(loopA);
        release(idle, true);

        pool.forget(worker, List.of(loopA, loopB));

        assertThat(Poll.eventually(WAIT, () -> !idle.isActive())).isTrue();
        assertThat(busy.isActive()).as("a connection in use finishes its call").isTrue();
        release(busy, true); // runs after forget on the same loop
        assertThat(Poll.eventually(WAIT, () -> !busy.isActive() && pool.openConnections() == 0)).isTrue();
    }
}
