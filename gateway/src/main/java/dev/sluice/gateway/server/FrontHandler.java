package dev.sluice.gateway.server;


import dev.sluice.gateway.admin.RecentErrors;
import dev.sluice.gateway.admission.PromptText;
import dev.sluice.gateway.admission.RequestClassifier.RequestClass;
import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.api.ApiException;
import dev.sluice.gateway.api.CompletionTokenLimits;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.pd.ModeLimits;
import dev.sluice.gateway.api.GenerationRoute;
import dev.sluice.gateway.config.DisaggregationMode;
import dev.sluice.gateway.api.Outcome;
import dev.sluice.gateway.pd.PdExchange;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.util.ReferenceCountUtil;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import dev.sluice.gateway.logging.LogThrottle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client connection's last handler: routes each request and runs one at a time (HTTP/1.1
 * pipelined requests wait their turn, bounded). When the client leaves, whatever it started is
 * stopped: an exchange in flight aborts both halves.
 */
final class FrontHandler extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(FrontHandler.class);
    private static final int MAX_PIPELINED = 16;
    private static final int REJECTED_LINES_PER_SECOND = 50;
    private static final LogThrottle REJECTED_LINES = new LogThrottle(REJECTED_LINES_PER_SECOND);

    private final FrontServices front;
    private final ArrayDeque<FullHttpRequest> waiting = new ArrayDeque<>();
    private PdExchange exchange;
    private boolean busy;
    private ChannelHandlerContext ctx;

    FrontHandler(FrontServices front) {
        this.front = front;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof FullHttpRequest req)) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (busy) {
            if (waiting.size() >= MAX_PIPELINED) {
                req.release();
                log.warn("closing connection remote={} reason=\"more than {} pipelined requests\"",
                        ctx.channel().remoteAddress(), MAX_PIPELINED);
                ctx.close();
                return;
            }
            waiting.addLast(req);
            return;
        }
        handle(req);
    }

    private void handle(FullHttpRequest req) {
        busy = true;
        LiveSettings live = front.live().get(); // one snapshot per request: a reload never shows half
        try {
            dispatch(req, live);
        } catch (RuntimeException e) {
            internalError(req, live, e);
        } finally {
            req.release();
        }
    }

    /**
     * The gateway's own code threw while taking the request (a bug): the client gets a 500 (or, if
     * an exchange already answers it, that exchange ends it), the error is counted and logged once
     * with its stack trace, and no worker is blamed.
     */
    private void internalError(FullHttpRequest req, LiveSettings live, RuntimeException e) {
        if (exchange != null) {
            exchange.failInternal(e); // its exchange exists: it answers, counts, logs and ends it
            return;
        }
        front.metrics().internalError("client_handler");
        log.error("internal error taking a request method={} path={}", req.method(), loggablePath(req.uri()), e);
        if (busy) {
            reject(ApiError.internal("the gateway failed while taking this request; the error is logged and "
                    + "counted in sluice_internal_errors_total"), req, false, live);
        }
    }

    private void dispatch(FullHttpRequest req, LiveSettings live) {
        long received = System.nanoTime();
        boolean keepAlive = HttpUtil.isKeepAlive(req);
        if (req.decoderResult().isFailure()) {
            reject(ApiError.invalidRequest("bad_http", "malformed HTTP request: " + req.decoderResult().cause()), req, false,
                    live);
            return;
        }
        String path = Routes.pathOf(req.uri());
        String allowed = Routes.allowedMethod(path);
        if (allowed == null) {
            reject(ApiError.notFound(path), req, keepAlive, live);
            return;
        }
        if (!allowed.equals(req.method().name())) {
            reject(ApiError.methodNotAllowed(req.method().name(), path, allowed), req, keepAlive, live);
            return;
        }
        GenerationRoute route = GenerationRoute.forPath(path);
        // SGLang's native /generate is the default pool's: refused before any parse where that pool is vLLM
        if (route == GenerationRoute.GENERATE
                && front.pools().defaultPool().settings().config().disaggregation() == DisaggregationMode.VLLM) {
            reject(ApiError.notFound(path + " (SGLang's native API; in disaggregation: vllm the gateway serves "
                    + "/v1/chat/completions and /v1/completions)"), req, keepAlive, live);
            return;
        }
        if (route != null) {
            generation(req, route, live, keepAlive, received);
        } else if (Routes.INFO.containsKey(path)) {
            try {
                live.classifier().classify(req.headers(), received); // these reach a worker too
            } catch (ApiException e) {
                reject(e.error(), req, keepAlive, live);
                return;
            }
            if (path.equals("/v1/models") && front.pools().explicit()) {
                // every pool's models: no one pool's workers know them all
                Responses.json(ctx, HttpResponseStatus.OK, front.pools().models(), keepAlive);
                front.metrics().requestEnded(Routes.metricLabel(path), Outcome.OK,
                        Duration.ofNanos(System.nanoTime() - received));
                requestDone();
                return;
            }
            // the route's own path, never the client's query: nothing a client writes reaches a worker's URL
            ModelPool pool = front.pools().defaultPool();
            InfoProxy.forward(ctx, path, keepAlive, pool.workers, pool.pd.pool(),
                    live.config().timeouts().firstToken(), front.metrics(), live.config().requestLogging(),
                    this::requestDone);
        } else {
            Outcome outcome = local(path, keepAlive, live);
            front.metrics().requestEnded(Routes.metricLabel(path), outcome,
                    Duration.ofNanos(System.nanoTime() - received));
            requestDone();
        }
    }

    /** A generation request: who asks, its body, its model's pool, then admission in that pool. */
    private void generation(FullHttpRequest req, GenerationRoute route, LiveSettings live, boolean keepAlive,
                            long received) {
        RequestClass cls;
        GenerationRequest parsed;
        try {
            // who is asking first: an unauthenticated request costs no body parse
            cls = live.classifier().classify(req.headers(), received);
            parsed = front.requestJson().parse(route, req.content());
            String className = live.config().admission().priorities().get(cls.priority());
            parsed = CompletionTokenLimits.apply(parsed, live.config().admission().classPolicy(className), className);
        } catch (ApiException e) {
            reject(e.error(), req, keepAlive, live);
            return;
        }
        // SGLang's native /generate goes to the default pool; the OpenAI routes to their model's
        ModelPool pool = route == GenerationRoute.GENERATE ? front.pools().defaultPool()
                : front.pools().of(parsed).orElse(null);
        if (pool == null) {
            reject(ApiError.modelNotFound(parsed.body().path("model").asText(), front.pools().modelList()), req,
                    keepAlive, live);
            return;
        }
        LiveSettings settings = pool.settings(); // the pool's own: its protocol, timeouts, retries
        var unsupported = ModeLimits.check(settings.config().disaggregation(), parsed);
        if (unsupported.isPresent()) {
            reject(unsupported.get(), req, keepAlive, live);
            return;
        }
        PdExchange ex = new PdExchange(pool.pd, settings.exchange(), ctx, parsed, keepAlive, received,
                this::requestDone, req.headers());
        exchange = ex;
        if (pool.retired()) { // read after joining the pool's in-flight set: see ModelPool.retire
            ex.fail(ApiError.modelNotFound(parsed.body().path("model").asText(), front.pools().modelList()), null);
            return;
        }
        PromptText prompt = PromptText.of(parsed);
        CompletableFuture<Long> counted = pool.counter().count(prompt);
        // the token ids for the KV event view: with the model's tokenizer, on its pool too
        CompletableFuture<int[]> ids = ex.promptIds();
        if (counted.isDone() && ids.isDone()) {
            ex.admit(prompt, counted.join(), ids.join(), cls.priority(), cls.tenant(), cls.deadlineNanos(),
                    cls.queueUpdates());
        } else {
            // exact counting or tokenizing ran on a pool: come back to this connection's event loop
            CompletableFuture.allOf(counted, ids).whenComplete((v, e) -> ctx.executor().execute(() -> ex.admit(
                    prompt, counted.isCompletedExceptionally() ? pool.estimator().estimate(prompt) : counted.join(),
                    ids.isCompletedExceptionally() ? new int[0] : ids.join(), cls.priority(), cls.tenant(),
                    cls.deadlineNanos(), cls.queueUpdates())));
        }
    }

    private Outcome local(String path, boolean keepAlive, LiveSettings live) {
        boolean internalEndpoints = live.config().listen().internalEndpoints();
        switch (path) {
            case "/health" -> Responses.json(ctx, HttpResponseStatus.OK, "{\"status\":\"ok\"}", keepAlive);
            case "/readiness" -> {
                ReadinessReport.Answer r = ReadinessReport.answer(front.pools(), front.draining().getAsBoolean(),
                        front.coordination().get(), internalEndpoints);
                Responses.json(ctx, r.ready() ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE,
                        r.body(), keepAlive);
            }
            // worker addresses and tenant names are for the operator's network, not every client's
            case "/metrics" -> {
                if (internalEndpoints) {
                    Responses.text(ctx, HttpResponseStatus.OK, "text/plain; version=0.0.4; charset=utf-8",
                            front.metrics().scrape(), keepAlive);
                } else {
                    ApiError hidden = ApiError.notFound(path + " (served on the admin listener; "
                            + "listen.internal_endpoints: true serves it here too)");
                    Responses.error(ctx, hidden, keepAlive);
                    return hidden.outcome();
                }
            }
            default -> {
                Responses.error(ctx, ApiError.notFound(path), keepAlive);
                return Outcome.BAD_REQUEST;
            }
        }
        return Outcome.OK;
    }

    /** The path without its query (which may carry a key) and bounded: a client chose these bytes. */
    private static String loggablePath(String uri) {
        String path = Routes.pathOf(uri);
        return path.length() <= 200 ? path : path.substring(0, 200) + "...";
    }

    private void reject(ApiError error, FullHttpRequest req, boolean keepAlive, LiveSettings live) {
        // a flood costs counters, not lines; logging.requests: none writes none at all
        long suppressed = live.config().requestLogging().logs(false)
                ? REJECTED_LINES.tryAcquire(System.nanoTime()) : -1;
        if (suppressed > 0) {
            log.info("request log: {} lines of refused requests suppressed (at most {} a second; "
                    + "sluice_requests_total counts every one)", suppressed, REJECTED_LINES_PER_SECOND);
        }
        if (suppressed >= 0) {
            log.info("request rejected method={} path={} status={} code={} detail=\"{}\"", req.method(),
                    loggablePath(req.uri()), error.status().code(), error.code(), error.message());
        }
        front.metrics().requestEnded(Routes.metricLabel(req.uri()), error.outcome(), Duration.ZERO);
        front.pd().tracing().refused(req.headers(), req.method().name(), Routes.pathOf(req.uri()),
                error.status().code(), error.code(), error.message());
        front.pd().recentErrors().add(new RecentErrors.Entry(java.time.Instant.now(), "-", Routes.metricLabel(req.uri()),
                error.status().code(), error.outcome().label(), error.code() + ": " + error.message()));
        Responses.error(ctx, error, keepAlive);
        requestDone();
    }

    /** The current request's response is complete: take the next pipelined one. */
    private void requestDone() {
        exchange = null;
        busy = false;
        FullHttpRequest next = waiting.pollFirst();
        if (next != null && ctx.channel().isActive()) {
            handle(next);
        } else if (next != null) {
            next.release();
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (exchange != null) {
            exchange.clientWritabilityChanged(ctx.channel().isWritable());
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        PdExchange ex = exchange;
        if (ex != null) {
            ex.clientGone();
        }
        FullHttpRequest r;
        while ((r = waiting.pollFirst()) != null) {
            r.release();
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof java.io.IOException) {
            log.debug("client connection error remote={} cause=\"{}\"", ctx.channel().remoteAddress(), cause.toString());
        } else {
            log.warn("client connection error remote={}", ctx.channel().remoteAddress(), cause);
        }
        ctx.close();
    }

}
