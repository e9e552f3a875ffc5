package dev.sluice.gateway.server;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.api.Outcome;
import dev.sluice.gateway.config.RequestLogging;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.upstream.UpstreamFetch;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Answers an informational GET ({@code /v1/models}, ...) from a usable prefill worker. */
final class InfoProxy {
    private static final Logger log = LoggerFactory.getLogger(InfoProxy.class);
    private static final int MAX_BODY = 4 << 20;

    private InfoProxy() {
    }

    static void forward(ChannelHandlerContext ctx, String uri, boolean keepAlive, WorkerSet workers, UpstreamPool pool,
                        Duration timeout, GatewayMetrics metrics, RequestLogging logging, Runnable onDone) {
        long started = System.nanoTime();
        Optional<Worker> w = workers.selectInfoSource();
        if (w.isEmpty()) {
            finish(ctx, uri, keepAlive, null, null, ApiError.noCapacity("no usable prefill worker to answer " + uri),
                    started, metrics, logging, onDone);
            return;
        }
        Worker worker = w.get();
        UpstreamFetch.get(pool, ctx.channel().eventLoop(), worker, uri, timeout, MAX_BODY).addListener(f -> {
            UpstreamFetch.Result r = (UpstreamFetch.Result) f.getNow();
            ApiError error = r.failure() == null ? null : r.failure().startsWith("timeout")
                    ? ApiError.timeout(worker.name() + " did not answer " + uri + " within " + timeout.toMillis() + " ms")
                    : ApiError.unreachable("prefill", worker.name(), r.failure());
            finish(ctx, uri, keepAlive, worker, r, error, started, metrics, logging, onDone);
        });
    }

    private static void finish(ChannelHandlerContext ctx, String uri, boolean keepAlive, Worker worker,
                               UpstreamFetch.Result result, ApiError error, long started, GatewayMetrics metrics,
                               RequestLogging logging, Runnable onDone) {
        if (!ctx.channel().isActive()) {
            onDone.run(); // the client left while we asked
            return;
        }
        int status;
        if (error == null) {
            status = result.status();
            Responses.send(ctx, HttpResponseStatus.valueOf(status), result.contentType(),
                    Unpooled.wrappedBuffer(result.body()), keepAlive);
        } else {
            status = error.status().code();
            Responses.error(ctx, error, keepAlive);
        }
        Outcome outcome = error == null ? Outcome.OK : error.outcome();
        Duration d = Duration.ofNanos(System.nanoTime() - started);
        metrics.requestEnded(Routes.metricLabel(uri), outcome, d);
        if (logging.logs(outcome == Outcome.OK)) {
            log.info("request route={} worker={} status={} outcome={} duration_ms={}", Routes.metricLabel(uri),
                    worker == null ? "-" : worker.name(), status, outcome.label(), d.toMillis());
        }
        onDone.run();
    }
}
