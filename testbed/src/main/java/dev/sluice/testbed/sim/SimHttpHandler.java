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
    /** SGLang's health check sleeps one second between polls ({@code await asyncio.sleep(1)}). */
    static final long HEALTH_POLL_NANOS = TimeUnit.SECONDS.toNanos(1);
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
        QueryStringDecoder query = new QueryStringDecoder(req.uri());
        String path = query.path();
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
            VllmRoutes.handle(worker, this, ch, req.method(), path, body, requestId,
                    headers.get(DpDispatch.VLLM_HEADER), keepAlive, now);
            return;
        }
        boolean get = req.method().equals(HttpMethod.GET) || req.method().equals(HttpMethod.HEAD);
        Route route = Route.of(path);
        if (route != null && req.method().equals(HttpMethod.POST)) {
            RequestIntake.generation(worker, this, ch, route, body, requestId, null, keepAlive, now);
            return;
        }
        switch (get ? "GET " + path : req.method().name() + " " + path) {
            case "GET /health" -> health(ch, keepAlive, true);
            case "GET /health_generate" -> health(ch, keepAlive, false);
            case "GET /v1/models" -> Responses.json(ch, 200, ServerInfo.models(worker), keepAlive);
            case "GET /get_model_info" -> {
                deprecated("/get_model_info", "/model_info");
                Responses.json(ch, 200, ServerInfo.modelInfo(worker), keepAlive);
            }
            case "GET /model_info" -> Responses.json(ch, 200, ServerInfo.modelInfo(worker), keepAlive);
            case "GET /get_server_info" -> {
                deprecated("/get_server_info", "/server_info");
                Responses.json(ch, 200, ServerInfo.serverInfo(worker), keepAlive);
            }
            case "GET /server_info" -> Responses.json(ch, 200, ServerInfo.serverInfo(worker), keepAlive);
            case "GET /get_load" -> {
                deprecated("/get_load", "/v1/loads");
                Responses.json(ch, 200, ServerInfo.load(worker), keepAlive);
            }
            case "GET /v1/loads" -> loads(ch, query, keepAlive);
            case "GET /metrics" -> {
                if (worker.cfg.enableMetrics()) {
                    Responses.text(ch, 200, SimMetrics.CONTENT_TYPE, worker.renderMetrics(), keepAlive);
                } else {
                    // no --enable-metrics: SGLang mounts no /metrics route
                    // (sgl-project/sglang python/sglang/srt/entrypoints/http_server.py launch_server:
                    // add_prometheus_middleware only under server_args.enable_metrics)
                    Responses.json(ch, 404, Responses.error(404, "NotFoundError", "Not Found: " + path), keepAlive);
                }
            }
            case "GET /sim/stats" -> Responses.json(ch, 200, SseWriter.JSON.valueToTree(worker.stats()), keepAlive);
            case "GET /sim/faults" -> Responses.json(ch, 200, worker.faults.toJson(), keepAlive);
            case "POST /sim/faults" -> simFaults(worker, ch, body, keepAlive);
            case "POST /abort_request" -> {
                if (authorized(headers.get("authorization"))) {
                    RequestIntake.abortRequest(worker, ch, body, keepAlive, now);
                } else {
                    // SGLang's API key middleware: 401 {"error": "Unauthorized"}
                    // (sgl-project/sglang sglang.srt.utils add_api_key_middleware, imported by http_server.py)
                    Responses.json(ch, 401, JsonNodeFactory.instance.objectNode().put("error", "Unauthorized"),
                            keepAlive);
                }
            }
            case "POST /flush_cache" -> {
                worker.prefixCache.clear();
                Responses.text(ch, 200, null, "Cache flushed.\n", keepAlive);
            }
            default -> Responses.json(ch, 404, Responses.error(404, "NotFoundError", "Not Found: " + path),
                    keepAlive);
        }
    }

    /**
     * SGLang's health check (sgl-project/sglang python/sglang/srt/entrypoints/http_server.py
     * health_generate, which serves both {@code /health} and {@code /health_generate}): unless
     * {@code /health} takes the fast path ({@code SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0},
     * here {@code healthGeneration=false}: 200 at once), it submits a one-token generation and polls
     * once a second; the first poll at which the server produced any output since the check began (its
     * own token, or any other request's: {@code last_receive_tstamp > tic}) answers 200, empty body;
     * after {@code HEALTH_CHECK_TIMEOUT} ({@code healthCheckTimeout}) without output, 503. So never
     * under about a second. The simulated check's own token comes after one token's time unless
     * generation is stalled ({@code stallAll}, a decode's {@code stallAfterTokens}); {@code kvStall} does
     * not stall it, since SGLang's check takes the fake bootstrap path and never waits for a KV transfer
     * (a silent stall: see {@link FaultKnobs#kvStall()}). Simulator knobs:
     * {@code healthStatus} overrides {@code /health} at once; {@code failStatus} fails the check at once.
     * The pending check ends with its connection.
     */
    private void health(Channel ch, boolean keepAlive, boolean plainHealth) {
        if (plainHealth) {
            int status = worker.faults.healthStatus();
            if (status > 0) {
                Responses.text(ch, status, null, "", keepAlive);
                return;
            }
            if (!worker.cfg.healthGeneration()) {
                Responses.text(ch, 200, null, "", keepAlive);
                return;
            }
        }
        int failStatus = worker.faults.failStatus();
        if (failStatus > 0) {
            Responses.json(ch, failStatus, Responses.error(failStatus, Responses.errorType(failStatus),
                    "simulated failure"), keepAlive);
            return;
        }
        if (healthAnswer != null) {
            healthAnswer.cancel(false); // a pipelined second probe: answer only once
        }
        pollHealth(ch, keepAlive, System.nanoTime());
    }

    private void pollHealth(Channel ch, boolean keepAlive, long tic) {
        healthAnswer = ch.eventLoop().schedule(() -> {
            healthAnswer = null;
            if (!ch.isActive()) {
                return;
            }
            long now = System.nanoTime();
            boolean ownToken = !worker.generationStalled() && now - tic >= worker.oneTokenNanos();
            if (ownToken || worker.lastOutputNanos - tic > 0) {
                Responses.text(ch, 200, null, "", keepAlive);
                return;
            }
            if (now - tic >= worker.cfg.healthCheckTimeout().toNanos()) {
                log.error("{} {} Health check failed. Server couldn't get a response from detokenizer for last {} "
                        + "seconds.", worker.role(), worker.ordinal, worker.cfg.healthCheckTimeout().toSeconds());
                Responses.text(ch, 503, null, "", keepAlive);
                return;
            }
            pollHealth(ch, keepAlive, tic);
        }, HEALTH_POLL_NANOS, TimeUnit.NANOSECONDS);
    }

    /**
     * A call of a deprecated route: SGLang logs a warning each time (sgl-project/sglang
     * python/sglang/srt/entrypoints/http_server.py get_load / get_model_info / get_server_info).
     */
    private void deprecated(String route, String replacement) {
        worker.deprecatedCalls.increment();
        log.warn("Endpoint '{}' is deprecated and will be removed in a future version. Please use '{}' instead.",
                route, replacement);
    }

    private void loads(Channel ch, QueryStringDecoder query, boolean keepAlive) {
        try {
            Responses.json(ch, 200, ServerInfo.loads(worker, first(query, "include"), first(query, "dp_rank")),
                    keepAlive);
        } catch (ServerInfo.BadLoadsQuery e) {
            Responses.json(ch, 400, Responses.error(400, "BadRequestError", e.getMessage()), keepAlive);
        }
    }

    private static String first(QueryStringDecoder query, String name) {
        var values = query.parameters().get(name);
        return values == null || values.isEmpty() ? null : values.get(0);
    }

    /** {@code --admin-api-key}: the admin routes need {@code Authorization: Bearer <key>}. */
    private boolean authorized(String authorization) {
        String key = worker.cfg.adminApiKey();
        return key == null || ("Bearer " + key).equals(authorization);
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
