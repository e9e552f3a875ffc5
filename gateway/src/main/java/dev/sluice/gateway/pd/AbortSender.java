package dev.sluice.gateway.pd;

import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamCall;
import dev.sluice.gateway.upstream.UpstreamFailure;
import dev.sluice.gateway.upstream.UpstreamListener;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
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
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends SGLang's {@code POST /abort_request {"rid": ...}} to a worker that still holds a request
 * the gateway gave up on, so that neither half keeps GPU time or KV memory for nobody. The
 * result is counted ({@code sluice_abort_requests_sent_total{role,result}}) and logged.
 */
public final class AbortSender {
    private static final Logger log = LoggerFactory.getLogger(AbortSender.class);

    private final UpstreamPool pool;
    private final GatewayMetrics metrics;
    private final Duration timeout;

    public AbortSender(UpstreamPool pool, GatewayMetrics metrics, Duration timeout) {
        this.pool = pool;
        this.metrics = metrics;
        this.timeout = timeout;
    }

    /** Must be called on {@code loop}. One abort per item rid. */
    public void abort(EventLoop loop, Worker worker, Iterable<String> rids) {
        for (String rid : rids) {
            send(loop, worker, rid);
        }
    }

    private void send(EventLoop loop, Worker worker, String rid) {
        long started = System.nanoTime();
        Outcome outcome = new Outcome(worker, rid, started);
        UpstreamCall call = new UpstreamCall(pool, worker, outcome);
        outcome.timer = loop.schedule(() -> {
            call.cancel();
            outcome.finish("timeout", "no answer within " + timeout.toMillis() + " ms");
        }, timeout.toMillis(), TimeUnit.MILLISECONDS);
        ByteBuf body = ByteBufUtil.writeUtf8(io.netty.buffer.ByteBufAllocator.DEFAULT,
                "{\"rid\":\"" + rid + "\"}");
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/abort_request", body);
        req.headers().set(HttpHeaderNames.HOST, worker.name())
                .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes())
                .set("X-Request-Id", rid);
        call.start(loop, req);
    }

    private final class Outcome implements UpstreamListener {
        private final Worker worker;
        private final String rid;
        private final long started;
        private int status;
        private boolean done;
        ScheduledFuture<?> timer;

        Outcome(Worker worker, String rid, long started) {
            this.worker = worker;
            this.rid = rid;
            this.started = started;
        }

        @Override
        public void onResponseHead(HttpResponse head) {
            status = head.status().code();
        }

        @Override
        public void onContent(HttpContent content) {
            boolean last = content instanceof LastHttpContent;
            content.release();
            if (last) {
                finish(status / 100 == 2 ? "ok" : "error", "status " + status);
            }
        }

        @Override
        public void onFailure(UpstreamFailure failure) {
            finish("failed", failure.label() + ": " + failure.detail());
        }

        void finish(String result, String detail) {
            if (done) {
                return;
            }
            done = true;
            if (timer != null) {
                timer.cancel(false);
            }
            metrics.abortRequestSent(worker.role().label(), result);
            log.info("abort_request rid={} role={} worker={} result={} detail=\"{}\" ms={}", rid, worker.role().label(),
                    worker.name(), result, detail, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        }
    }
}
