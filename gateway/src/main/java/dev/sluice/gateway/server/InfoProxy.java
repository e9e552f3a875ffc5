package dev.sluice.gateway.server;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.api.Outcome;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.upstream.UpstreamCall;
import dev.sluice.gateway.upstream.UpstreamFailure;
import dev.sluice.gateway.upstream.UpstreamListener;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Answers an informational GET ({@code /v1/models}, ...) from a usable prefill worker. */
final class InfoProxy implements UpstreamListener {
    private static final Logger log = LoggerFactory.getLogger(InfoProxy.class);
    private static final int MAX_BODY = 4 << 20;

    private final ChannelHandlerContext ctx;
    private final String path;
    private final boolean keepAlive;
    private final GatewayMetrics metrics;
    private final Runnable onDone;
    private final long started = System.nanoTime();
    private CompositeByteBuf body;
    private HttpResponse head;
    private Worker worker;
    private UpstreamCall call;
    private ScheduledFuture<?> timer;
    private boolean done;

    InfoProxy(ChannelHandlerContext ctx, String path, boolean keepAlive, GatewayMetrics metrics, Runnable onDone) {
        this.ctx = ctx;
        this.path = path;
        this.keepAlive = keepAlive;
        this.metrics = metrics;
        this.onDone = onDone;
    }

    void start(WorkerSet workers, UpstreamPool pool, Duration timeout) {
        Optional<Worker> w = workers.selectInfoSource();
        if (w.isEmpty()) {
            finish(null, ApiError.noCapacity("no usable prefill worker to answer " + path));
            return;
        }
        worker = w.get();
        call = new UpstreamCall(pool, worker, this);
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, path);
        req.headers().set(HttpHeaderNames.HOST, worker.name()).setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
        timer = ctx.executor().schedule(() -> {
            call.cancel();
            finish(null, ApiError.timeout(worker.name() + " did not answer " + path + " within " + timeout.toMillis() + " ms"));
        }, timeout.toMillis(), TimeUnit.MILLISECONDS);
        call.start(ctx.channel().eventLoop(), req);
    }

    @Override
    public void onResponseHead(HttpResponse h) {
        head = h;
        body = ctx.alloc().compositeBuffer();
    }

    @Override
    public void onContent(HttpContent content) {
        if (done) {
            content.release();
            return;
        }
        if (body.readableBytes() + content.content().readableBytes() > MAX_BODY) {
            content.release();
            call.cancel();
            finish(null, ApiError.malformed("prefill", worker.name(), path + " response larger than " + MAX_BODY + " bytes"));
            return;
        }
        body.addComponent(true, content.content().retain());
        boolean last = content instanceof LastHttpContent;
        content.release();
        if (last) {
            ByteBuf b = body;
            body = null;
            finish(b, null);
        }
    }

    @Override
    public void onFailure(UpstreamFailure failure) {
        finish(null, ApiError.unreachable("prefill", worker.name(), failure.label() + ": " + failure.detail()));
    }

    private void finish(ByteBuf content, ApiError error) {
        if (done) {
            if (content != null) {
                content.release();
            }
            return;
        }
        done = true;
        if (timer != null) {
            timer.cancel(false);
        }
        if (body != null) {
            body.release();
            body = null;
        }
        int status;
        if (error == null) {
            String ct = head.headers().get(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON.toString());
            status = head.status().code();
            Responses.send(ctx, HttpResponseStatus.valueOf(status), ct, content, keepAlive);
        } else {
            status = error.status().code();
            Responses.error(ctx, error, keepAlive);
        }
        Outcome outcome = error == null ? Outcome.OK : error.outcome();
        Duration d = Duration.ofNanos(System.nanoTime() - started);
        metrics.requestEnded(Routes.metricLabel(path), outcome, d);
        log.info("request route={} worker={} status={} outcome={} duration_ms={}", Routes.metricLabel(path),
                worker == null ? "-" : worker.name(), status, outcome.label(), d.toMillis());
        onDone.run();
    }

    /** The client left while we waited. */
    void clientGone() {
        if (!done && call != null) {
            call.cancel();
        }
        done = true;
        if (timer != null) {
            timer.cancel(false);
        }
        if (body != null) {
            body.release();
            body = null;
        }
    }
}
