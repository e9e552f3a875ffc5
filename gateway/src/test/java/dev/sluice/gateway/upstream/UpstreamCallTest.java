package dev.sluice.gateway.upstream;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.transport.Transport;
import dev.sluice.testbed.staticbackend.StaticBackend;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** One call to a real loopback server on port 0, over the real pool and event loop. */
class UpstreamCallTest {
    private StaticBackend backend;
    private EventLoopGroup group;
    private UpstreamPool pool;
    private Worker worker;

    @BeforeEach
    void start() throws Exception {
        backend = StaticBackend.start(new StaticBackend.Options("127.0.0.1", 0, false, Duration.ZERO));
        Transport transport = Transport.best();
        group = transport.newGroup(1, "test-loop");
        pool = new UpstreamPool(transport, Duration.ofSeconds(2), 4, Duration.ofSeconds(30));
        worker = new Worker(WorkerRole.DECODE, new WorkerEndpoint("http://127.0.0.1:" + backend.port(), "127.0.0.1",
                backend.port(), null));
    }

    @AfterEach
    void stop() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(3, TimeUnit.SECONDS);
        backend.close();
    }

    /** A listener that throws where the gateway's own code would (a bug in what reads the answer). */
    private static final class ThrowingListener implements UpstreamListener {
        final List<UpstreamFailure> failures = new CopyOnWriteArrayList<>();
        final List<Throwable> ownErrors = new CopyOnWriteArrayList<>();
        final CountDownLatch ended = new CountDownLatch(1);

        @Override
        public void onResponseHead(HttpResponse head) {
            throw new IllegalStateException("a gateway bug while reading the head");
        }

        @Override
        public void onContent(HttpContent content) {
            content.release();
        }

        @Override
        public void onFailure(UpstreamFailure failure) {
            failures.add(failure);
            ended.countDown();
        }

        @Override
        public void onListenerError(Throwable error) {
            ownErrors.add(error);
            ended.countDown();
        }
    }

    @Test
    void aGatewayExceptionInTheListenerIsNotReportedAsTheWorkersConnectionFailure() throws Exception {
        ThrowingListener listener = new ThrowingListener();
        EventLoop loop = group.next();
        UpstreamCall call = new UpstreamCall(pool, worker, listener);
        loop.execute(() -> {
            var req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/health");
            req.headers().set(HttpHeaderNames.HOST, worker.name());
            call.start(loop, req);
        });
        assertThat(listener.ended.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(listener.failures).noneMatch(f -> f.kind() == UpstreamFailure.Kind.RESET);
        assertThat(listener.ownErrors).singleElement().satisfies(e -> assertThat(e).hasMessageContaining("gateway bug"));
        // the connection's state was unknown: closed, not pooled
        assertThat(PdTestbed.eventually(Duration.ofSeconds(5), () -> pool.openConnections() == 0)).isTrue();
    }
}
