package dev.sluice.gateway.admin;

import dev.sluice.gateway.config.GatewayConfig.AdminConfig;
import dev.sluice.gateway.metrics.GatewayMetrics;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerKeepAliveHandler;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.net.InetSocketAddress;

/**
 * The admin listener, separate from client traffic and on loopback by default:
 * {@code GET /} (the live status page, {@link StatusPage}), {@code GET /admin/state} (JSON for the
 * page, humans and {@code sluice-gateway status}), {@code GET /metrics}, {@code POST /admin/reload} and
 * the worker API ({@code /admin/workers}; the mutating routes, behind the admin token when one is set).
 * Everything here runs on the admin event loop ({@code sluice-admin}).
 */
public final class AdminServer implements AutoCloseable {
    private final AdminConfig config;
    private final StateView state;
    private final GatewayMetrics metrics;
    private final StatusPage page = StatusPage.load();
    private Channel listener;
    private volatile java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> reload;
    /**
     * {@code admin.token_file} or SLUICE_ADMIN_TOKEN, as the configuration read it: when set, POST /admin/reload
     * needs {@code Authorization: Bearer <it>}; a listener off loopback always has one ({@link AdminConfig}).
     */
    private final byte[] token;

    public AdminServer(AdminConfig config, StateView state, GatewayMetrics metrics) {
        this.config = config;
        this.state = state;
        this.metrics = metrics;
        this.token = config.token().map(t -> t.reveal().getBytes(java.nio.charset.StandardCharsets.UTF_8)).orElse(null);
    }

    public void start(EventLoopGroup boss, EventLoopGroup workers, Class<? extends ServerChannel> channel)
            throws InterruptedException {
        listener = new ServerBootstrap().group(boss, workers).channel(channel)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpServerKeepAliveHandler(),
                                new HttpObjectAggregator(64 * 1024), new Handler());
                    }
                })
                .bind(config.host(), config.port()).sync().channel();
    }

    private volatile WorkerRoutes workerRoutes;

    /** Enables the worker registration API ({@code /admin/workers}) over {@code directory}, the one pool's. */
    public void onWorkers(dev.sluice.gateway.discovery.WorkerDirectory directory) {
        java.util.Map<String, dev.sluice.gateway.discovery.WorkerDirectory> one =
                java.util.Map.of(dev.sluice.gateway.config.PoolsConfig.IMPLICIT_NAME, directory);
        onWorkers(() -> one, dev.sluice.gateway.config.PoolsConfig.IMPLICIT_NAME);
    }

    /**
     * ... over each model pool's directory, by pool name, as the pools serving at the time of each call (a reload
     * adds and removes pools); a call naming no pool goes to {@code defaultPool}.
     */
    public void onWorkers(java.util.function.Supplier<java.util.Map<String, dev.sluice.gateway.discovery.WorkerDirectory>>
                                  directories, String defaultPool) {
        this.workerRoutes = new WorkerRoutes(directories, defaultPool);
    }

    /** Enables {@code POST /admin/reload}; the supplier runs the reload and describes its result. */
    public void onReload(java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> reload) {
        this.reload = reload;
    }

    private boolean authorized(FullHttpRequest req) {
        if (token == null) {
            return true;
        }
        String h = req.headers().get(HttpHeaderNames.AUTHORIZATION);
        byte[] given = h != null && h.startsWith("Bearer ")
                ? h.substring(7).trim().getBytes(java.nio.charset.StandardCharsets.UTF_8) : new byte[0];
        return java.security.MessageDigest.isEqual(token, given); // constant time
    }

    public int port() {
        return ((InetSocketAddress) listener.localAddress()).getPort();
    }

    @Override
    public void close() {
        if (listener != null) {
            listener.close().awaitUninterruptibly(2, java.util.concurrent.TimeUnit.SECONDS);
        }
    }

    private final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            String path = req.uri().split("\\?", 2)[0];
            HttpResponseStatus status = HttpResponseStatus.OK;
            String type = "application/json";
            String body;
            if (path.equals("/admin/reload") && req.method().equals(HttpMethod.POST) && !authorized(req)) {
                respond(ctx, req, HttpResponseStatus.UNAUTHORIZED, "application/json", "{\"error\":{\"message\":\"POST "
                        + "/admin/reload needs Authorization: Bearer <the admin token: SLUICE_ADMIN_TOKEN or "
                        + "admin.token_file>\",\"type\":\"authentication_error\",\"code\":\"unauthorized\"}}");
                return;
            }
            WorkerRoutes wr = workerRoutes;
            if (wr != null && WorkerRoutes.matches(path)) {
                WorkerRoutes.Reply r = authorized(req) ? wr.handle(req.method(), path, ByteBufUtil.getBytes(req.content()))
                        : WorkerRoutes.error(401, "authentication_error", "unauthorized", req.method() + " " + path
                        + " needs Authorization: Bearer <the admin token: SLUICE_ADMIN_TOKEN or admin.token_file>");
                respond(ctx, req, HttpResponseStatus.valueOf(r.status()), "application/json", r.body());
                return;
            }
            if (path.equals("/admin/reload") && req.method().equals(HttpMethod.POST) && reload != null) {
                // reads a file: off the event loop, answered when done
                req.retain();
                java.util.concurrent.CompletableFuture.supplyAsync(reload::get).whenComplete((result, error) ->
                        ctx.executor().execute(() -> {
                            try {
                                boolean ok = error == null && !"invalid".equals(result.path("result").asText());
                                respond(ctx, req, ok ? HttpResponseStatus.OK : HttpResponseStatus.UNPROCESSABLE_ENTITY,
                                        "application/json", error == null ? result.toPrettyString()
                                                : com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode()
                                                        .put("result", "invalid").put("error", String.valueOf(error))
                                                        .toPrettyString());
                            } finally {
                                req.release();
                            }
                        }));
                return;
            }
            if (!req.method().equals(HttpMethod.GET)) {
                status = HttpResponseStatus.METHOD_NOT_ALLOWED;
                body = "{\"error\":{\"message\":\"only GET (and POST /admin/reload, /admin/workers)\",\"type\":\"invalid_request_error\",\"code\":\"method_not_allowed\"}}";
            } else if (path.equals("/admin/state")) {
                body = state.render().toPrettyString();
            } else if (path.equals("/metrics")) {
                // a scraper that asks for OpenMetrics (Prometheus does) gets it, with the latency exemplars
                String accept = req.headers().get(io.netty.handler.codec.http.HttpHeaderNames.ACCEPT);
                type = GatewayMetrics.acceptsOpenMetrics(accept) ? GatewayMetrics.OPENMETRICS
                        : "text/plain; version=0.0.4; charset=utf-8";
                body = metrics.scrape(accept);
            } else if (page.at(path).isPresent()) {
                servePage(ctx, req, page.at(path).get());
                return;
            } else {
                status = HttpResponseStatus.NOT_FOUND;
                body = "{\"error\":{\"message\":\"no route for " + path.replace("\"", "")
                        + "\",\"type\":\"invalid_request_error\",\"code\":\"not_found\"}}";
            }
            respond(ctx, req, status, type, body);
        }

        /** A file of the status page: the browser may run or load nothing that this listener did not serve. */
        private void servePage(ChannelHandlerContext ctx, FullHttpRequest req, StatusPage.Asset asset) {
            FullHttpResponse res = response(req, HttpResponseStatus.OK, asset.contentType(),
                    Unpooled.wrappedBuffer(asset.body()));
            res.headers().set("Content-Security-Policy", StatusPage.CONTENT_SECURITY_POLICY)
                    .set("X-Content-Type-Options", "nosniff").set(HttpHeaderNames.CACHE_CONTROL, "no-cache")
                    .set("Referrer-Policy", "no-referrer");
            ctx.writeAndFlush(res).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        }

        private void respond(ChannelHandlerContext ctx, FullHttpRequest req, HttpResponseStatus status, String type,
                             String body) {
            ctx.writeAndFlush(response(req, status, type, ByteBufUtil.writeUtf8(ctx.alloc(), body)))
                    .addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        }

        private FullHttpResponse response(FullHttpRequest req, HttpResponseStatus status, String type, ByteBuf body) {
            FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, body);
            res.headers().set(HttpHeaderNames.CONTENT_TYPE, type).setInt(HttpHeaderNames.CONTENT_LENGTH,
                    res.content().readableBytes());
            HttpUtil.setKeepAlive(res, HttpUtil.isKeepAlive(req));
            return res;
        }
    }
}
