package dev.sluice.gateway.upstream;

import dev.sluice.gateway.config.Secret;
import dev.sluice.gateway.routing.Worker;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.LoggerFactory;

/**
 * A small whole-response exchange with a worker (health probe, telemetry poll, abort, info GET):
 * the body is collected on the heap up to a limit, the whole exchange bounded by a timeout. Not
 * for generation traffic, which is relayed piece by piece.
 */
public final class UpstreamFetch {
    /** What came back: a status, a content type and a body; or {@code failure} when nothing usable did. */
    public record Result(int status, String contentType, byte[] body, String failure) {
        public boolean ok() {
            return failure == null && status / 100 == 2;
        }

        public String text() {
            return new String(body, java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    private UpstreamFetch() {
    }

    public static Future<Result> get(UpstreamPool pool, EventLoop loop, Worker worker, String path, Duration timeout,
                                     int maxBody) {
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, path, Unpooled.EMPTY_BUFFER);
        req.headers().set(HttpHeaderNames.HOST, worker.name()).setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
        authorize(req, worker);
        return send(pool, loop, worker, req, timeout, maxBody);
    }

    public static Future<Result> postJson(UpstreamPool pool, EventLoop loop, Worker worker, String path, String json,
                                          String requestId, Duration timeout) {
        return postJson(pool, loop, worker, path, json, requestId, timeout, worker.authorization());
    }

    /** As above, with {@code authorization} (when present) instead of the worker's own key: an admin route's key. */
    public static Future<Result> postJson(UpstreamPool pool, EventLoop loop, Worker worker, String path, String json,
                                          String requestId, Duration timeout,
                                          Optional<Secret> authorization) {
        ByteBuf body = ByteBufUtil.writeUtf8(io.netty.buffer.ByteBufAllocator.DEFAULT, json);
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, path, body);
        req.headers().set(HttpHeaderNames.HOST, worker.name())
                .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes())
                .set("X-Request-Id", requestId);
        authorization.ifPresent(a -> req.headers().set(HttpHeaderNames.AUTHORIZATION, a.reveal()));
        return send(pool, loop, worker, req, timeout, 64 * 1024);
    }

    /** The worker's own API key ({@code workers.api_key_env}), on health checks, telemetry, aborts and info GETs too. */
    private static void authorize(FullHttpRequest req, Worker worker) {
        worker.authorization().ifPresent(a -> req.headers().set(HttpHeaderNames.AUTHORIZATION, a.reveal()));
    }

    /** Must be called on {@code loop}; ownership of {@code request} passes to the call. */
    public static Future<Result> send(UpstreamPool pool, EventLoop loop, Worker worker, FullHttpRequest request,
                                      Duration timeout, int maxBody) {
        Promise<Result> promise = loop.newPromise();
        Collector collector = new Collector(promise, maxBody);
        UpstreamCall call = new UpstreamCall(pool, worker, collector);
        ScheduledFuture<?> timer = loop.schedule(() -> {
            call.cancel();
            promise.trySuccess(new Result(0, "", new byte[0], "timeout: no answer within " + timeout.toMillis() + " ms"));
        }, timeout.toMillis(), TimeUnit.MILLISECONDS);
        promise.addListener(f -> timer.cancel(false));
        collector.call = call;
        call.start(loop, request);
        return promise;
    }

    private static final class Collector implements UpstreamListener {
        private final Promise<Result> promise;
        private final int maxBody;
        private final ByteArrayOutputStream body = new ByteArrayOutputStream();
        private HttpResponse head;
        UpstreamCall call;

        Collector(Promise<Result> promise, int maxBody) {
            this.promise = promise;
            this.maxBody = maxBody;
        }

        @Override
        public void onResponseHead(HttpResponse h) {
            head = h;
        }

        @Override
        public void onContent(HttpContent content) {
            try {
                ByteBuf data = content.content();
                if (body.size() + data.readableBytes() > maxBody) {
                    call.cancel();
                    promise.trySuccess(new Result(head.status().code(), "", new byte[0],
                            "malformed: body larger than " + maxBody + " bytes"));
                    return;
                }
                byte[] chunk = new byte[data.readableBytes()];
                data.getBytes(data.readerIndex(), chunk);
                body.writeBytes(chunk);
                if (content instanceof LastHttpContent) {
                    promise.trySuccess(new Result(head.status().code(),
                            head.headers().get(HttpHeaderNames.CONTENT_TYPE, "application/json"), body.toByteArray(), null));
                }
            } finally {
                content.release();
            }
        }

        @Override
        public void onFailure(UpstreamFailure failure) {
            promise.trySuccess(new Result(0, "", new byte[0], failure.label() + ": " + failure.detail()));
        }

        @Override
        public void onListenerError(Throwable error) {
            LoggerFactory.getLogger(UpstreamFetch.class).error("internal error reading a worker's answer worker={}",
                    call.worker().name(), error);
            promise.trySuccess(new Result(0, "", new byte[0], "gateway error: " + error));
        }
    }
}
