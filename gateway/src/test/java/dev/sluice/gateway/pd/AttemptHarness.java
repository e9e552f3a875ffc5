package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.api.ApiException;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.GenerationRoute;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.transport.Transport;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * What a driver or a half sees of a request, built for a test: a {@link RecordingEvents} as the
 * exchange, an {@link EmbeddedChannel} as the client's connection (behind a real
 * {@link HttpResponseEncoder}, read back through a decoder: what a client would get on the wire),
 * a real {@link ClientSink} on it, and real {@link AttemptServices} (pool, aborts, metrics).
 *
 * <p>{@link #embedded()}: everything on the client channel's own loop, for halves driven directly
 * with Netty HTTP objects (nothing may connect to a worker there). {@link #live()}: a real event
 * loop for attempts that talk to loopback workers; the embedded client channel is then touched only
 * on that loop ({@link #onLoop}), as the gateway touches its client's channel only on its loop.
 */
final class AttemptHarness implements AutoCloseable {
    /** A worker nothing connects to (a half driven directly never opens its call). */
    static final int NOWHERE = 1;

    final GatewayMetrics metrics = new GatewayMetrics();
    final UpstreamPool pool;
    final AttemptServices services;
    final RecordingEvents events = new RecordingEvents();
    final EmbeddedChannel client = new EmbeddedChannel();
    final ClientSink sink;
    final EventLoop loop;
    private final EventLoopGroup group;
    /** Reads the client's bytes back as HTTP, across calls (a stream arrives in pieces). */
    private final EmbeddedChannel wire = new EmbeddedChannel(new HttpResponseDecoder());
    private final Received received = new Received();
    private final List<ByteBuf> made = new ArrayList<>();

    private AttemptHarness(boolean live) {
        Transport transport = Transport.best();
        this.group = live ? transport.newGroup(1, "attempt-test") : null;
        this.loop = live ? group.next() : client.eventLoop();
        this.pool = new UpstreamPool(transport, Duration.ofSeconds(2), 8, Duration.ofSeconds(30));
        this.services = new AttemptServices(pool, new AbortSender(pool, metrics, Duration.ofSeconds(5)), metrics,
                1 << 20, Duration.ofSeconds(5));
        client.pipeline().addLast("encoder", new HttpResponseEncoder())
                .addLast("sink", new ChannelInboundHandlerAdapter());
        this.sink = new ChannelClientSink(client.pipeline().context("sink"), "client-rid", true, metrics);
    }

    static AttemptHarness embedded() {
        return new AttemptHarness(false);
    }

    static AttemptHarness live() {
        return new AttemptHarness(true);
    }

    RequestScope scope(GenerationRequest request) {
        return new RequestScope(request, loop, client.alloc(), sink, services, events);
    }

    RequestScope scope(GenerationRoute route, String json) {
        return scope(request(route, json));
    }

    static GenerationRequest request(GenerationRoute route, String json) {
        try {
            return GenerationRequest.parse(route, Unpooled.wrappedBuffer(json.getBytes(StandardCharsets.UTF_8)));
        } catch (ApiException e) {
            throw new AssertionError("test request refused: " + e.getMessage(), e);
        }
    }

    static Worker worker(WorkerRole role, int port, Integer bootstrapPort) {
        return new Worker(role, new WorkerEndpoint("http://127.0.0.1:" + port, "127.0.0.1", port, bootstrapPort));
    }

    static Worker worker(WorkerRole role, String url) {
        java.net.URI u = java.net.URI.create(url);
        return worker(role, u.getPort(), null);
    }

    /** Runs {@code work} on the request's loop and returns its result (at once on the embedded loop). */
    <T> T onLoop(Callable<T> work) throws Exception {
        if (group == null) {
            return work.call();
        }
        return loop.submit(work).get(10, TimeUnit.SECONDS);
    }

    void onLoop(Runnable work) throws Exception {
        onLoop(() -> {
            work.run();
            return null;
        });
    }

    // ---- a worker's answer, as the upstream codec hands it to a half ----

    static HttpResponse head(int status, String contentType) {
        HttpResponse h = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status));
        if (contentType != null) {
            h.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        }
        return h;
    }

    HttpContent chunk(String text) {
        return new DefaultHttpContent(track(text));
    }

    LastHttpContent last(String text) {
        return new DefaultLastHttpContent(track(text));
    }

    private ByteBuf track(String text) {
        ByteBuf b = Unpooled.copiedBuffer(text, StandardCharsets.UTF_8);
        made.add(b);
        return b;
    }

    /** Every buffer the test handed to a half was released by it (the half owns what it is given). */
    void assertAllReleased() {
        for (ByteBuf b : made) {
            assertThat(b.refCnt()).as("refCnt of a worker chunk handed to the half").isZero();
        }
    }

    // ---- what the client got ----

    /** What reached the client so far, decoded as HTTP. */
    static final class Received {
        int status;
        String contentType;
        final StringBuilder body = new StringBuilder();
        boolean ended;
        boolean headSeen;

        String body() {
            return body.toString();
        }
    }

    /** Reads everything the client was sent since the last call (call it on the loop in a live harness). */
    Received received() {
        client.runPendingTasks();
        ByteBuf out;
        while ((out = client.readOutbound()) != null) {
            wire.writeInbound(out);
        }
        Object msg;
        while ((msg = wire.readInbound()) != null) {
            if (msg instanceof HttpResponse h) {
                received.headSeen = true;
                received.status = h.status().code();
                received.contentType = h.headers().get(HttpHeaderNames.CONTENT_TYPE);
            }
            if (msg instanceof HttpContent c) {
                received.body.append(c.content().toString(StandardCharsets.UTF_8));
                received.ended |= c instanceof LastHttpContent;
                c.release();
            }
        }
        return received;
    }

    @Override
    public void close() throws Exception {
        onLoop(() -> {
            received();
            // every byte the client was sent was read by the test (Netty's codec-http test habit)
            assertThat(client.finishAndReleaseAll()).as("unread client output").isFalse();
            assertThat(wire.finishAndReleaseAll()).as("undecoded client bytes").isFalse();
        });
        if (group != null) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }
}
