package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.TextNode;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One per connection: routes whole requests (journaling each) to the worker and tells it when the
 * client leaves or its socket drains. It also sees every response it writes end, to close the
 * connection once idle under {@code closeIdleAfterMs}. Its timers (that idle close, a pending
 * {@code /health_generate}) end with the connection.
 */
final class SimHttpHandler extends ChannelDuplexHandler {
    private static final Logger log = LoggerFactory.getLogger(SimHttpHandler.class);
    private final SimWorker worker;
    /** The generation request this connection is serving, if any. */
    Exchange current;
    private ScheduledFuture<?> idleClose;
    private ScheduledFuture<?> healthAnswer;

    SimHttpHandler(SimWorker worker) {
        this.worker = worker;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof FullHttpRequest req)) {
            ReferenceCountUtil.release(msg);
            return;
        }
        cancelIdleClose(); // the connection is in use again
        try {
            handle(ctx.channel(), req);
        } finally {
            req.release();
        }
    }

    private void handle(Channel ch, FullHttpRequest req) {
        long now = System.nanoTime();
        boolean keepAlive = HttpUtil.isKeepAlive(req);
        String path = new QueryStringDecoder(req.uri()).path();
        JsonNode body = body(req);
        Map<String, String> headers = new LinkedHashMap<>();
        req.headers().forEach(h -> headers.putIfAbsent(h.getKey().toLowerCase(Locale.ROOT), h.getValue()));
        worker.journal.record(new RecordedRequest(req.method().name(), path, body, now, headers));
        if (!req.decoderResult().isSuccess()) {
            Responses.json(ch, 400, worker.errorBody(400, "BadRequestError", "malformed HTTP request"), false);
            return;
        }
        String requestId = headers.get("x-request-id");
        if (worker.isVllm()) {
            VllmRoutes.handle(worker, this, ch, req.method(), path, body, requestId, keepAlive, now);
            return;
        }
        boolean get = req.method().equals(HttpMethod.GET) || req.method().equals(HttpMethod.HEAD);
        Route route = Route.of(path);
        if (route != null && req.method().equals(HttpMethod.POST)) {
            RequestIntake.generation(worker, this, ch, route, body, requestId, keepAlive, now);
            return;
        }
        switch (get ? "GET " + path : req.method().name() + " " + path) {
            case "GET /health" -> {
                int status = worker.faults.healthStatus();
                Responses.text(ch, status > 0 ? status : 200, null, "", keepAlive);
            }
            case "GET /health_generate" -> healthGenerate(ch, keepAlive);
            case "GET /v1/models" -> Responses.json(ch, 200, ServerInfo.models(worker), keepAlive);
            case "GET /get_model_info" -> Responses.json(ch, 200, ServerInfo.modelInfo(worker), keepAlive);
            case "GET /get_server_info", "GET /server_info" -> Responses.json(ch, 200, ServerInfo.serverInfo(worker),
                    keepAlive);
            case "GET /get_load" -> Responses.json(ch, 200, ServerInfo.load(worker), keepAlive);
            case "GET /metrics" -> Responses.text(ch, 200, SimMetrics.CONTENT_TYPE,
                    worker.metrics.render(worker, worker.gauges()), keepAlive);
            case "GET /sim/stats" -> Responses.json(ch, 200, SseWriter.JSON.valueToTree(worker.stats()), keepAlive);
            case "GET /sim/faults" -> Responses.json(ch, 200, worker.faults.toJson(), keepAlive);
            case "POST /sim/faults" -> simFaults(worker, ch, body, keepAlive);
            case "POST /abort_request" -> RequestIntake.abortRequest(worker, ch, body, keepAlive, now);
            case "POST /flush_cache" -> {
                worker.prefixCache.clear();
                Responses.text(ch, 200, null, "Cache flushed.\n", keepAlive);
            }
            default -> Responses.json(ch, 404, Responses.error(404, "NotFoundError", "Not Found: " + path),
                    keepAlive);
        }
    }

    /**
     * SGLang's {@code /health_generate} runs a one-token generation: it fails as generation fails,
     * never answers while generation is stalled (the client's timeout or close ends it), and
     * otherwise answers 200 after one token's time. It is not counted as a request.
     */
    private void healthGenerate(Channel ch, boolean keepAlive) {
        int failStatus = worker.faults.failStatus();
        if (failStatus > 0) {
            Responses.json(ch, failStatus, Responses.error(failStatus, Responses.errorType(failStatus),
                    "simulated failure"), keepAlive);
            return;
        }
        if (worker.generationStalled()) {
            log.debug("{} {} health_generate stalled", worker.role(), worker.ordinal);
            return;
        }
        if (healthAnswer != null) {
            healthAnswer.cancel(false); // a pipelined second probe: answer only once
        }
        healthAnswer = ch.eventLoop().schedule(() -> {
            healthAnswer = null;
            if (ch.isActive()) {
                Responses.text(ch, 200, null, "", keepAlive);
            }
        }, worker.oneTokenNanos(), TimeUnit.NANOSECONDS);
    }

    private static JsonNode body(FullHttpRequest req) {
        if (!req.content().isReadable()) {
            return null;
        }
        String text = req.content().toString(StandardCharsets.UTF_8);
        try {
            return SseWriter.JSON.readTree(text);
        } catch (Exception e) {
            return TextNode.valueOf(text);
        }
    }

    static void simFaults(SimWorker worker, Channel ch, JsonNode body, boolean keepAlive) {
        try {
            worker.faults.apply(body == null ? JsonNodeFactory.instance.objectNode() : body);
            log.info("{} {} faults={}", worker.role(), worker.ordinal, worker.faults);
            Responses.json(ch, 200, worker.faults.toJson(), keepAlive);
        } catch (IllegalArgumentException e) {
            Responses.json(ch, 400, Responses.error(400, "BadRequestError", e.getMessage()), keepAlive);
        }
    }

    /** A response ends with its last content; once it is written the idle time of the connection starts. */
    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof LastHttpContent && worker.faults.closeIdleAfterMs() >= 0) {
            promise = promise.unvoid();
            promise.addListener(f -> {
                if (f.isSuccess()) {
                    armIdleClose(ctx);
                }
            });
        }
        ctx.write(msg, promise);
    }

    private void armIdleClose(ChannelHandlerContext ctx) {
        int ms = worker.faults.closeIdleAfterMs();
        if (ms < 0 || !ctx.channel().isActive()) {
            return;
        }
        cancelIdleClose();
        if (ms == 0) {
            log.debug("{} {} closing the connection after its response", worker.role(), worker.ordinal);
            ctx.close();
            return;
        }
        idleClose = ctx.executor().schedule(() -> {
            idleClose = null;
            log.debug("{} {} closing a connection idle for {} ms", worker.role(), worker.ordinal, ms);
            ctx.close();
        }, ms, TimeUnit.MILLISECONDS);
    }

    private void cancelIdleClose() {
        if (idleClose != null) {
            idleClose.cancel(false);
            idleClose = null;
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        cancelIdleClose();
        if (healthAnswer != null) {
            healthAnswer.cancel(false);
            healthAnswer = null;
        }
        Exchange ex = current;
        current = null;
        if (ex != null && !ex.ended()) {
            log.debug("client left role={} rid={}", worker.role(), ex.request.rid());
            ex.connectionClosed();
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        Exchange ex = current;
        if (ex != null && !ex.ended() && ctx.channel().isWritable()) {
            worker.onWritable(ex);
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug("connection error role={} port={}: {}", worker.role(), worker.port(), cause.toString());
        ctx.close();
    }
}
