package dev.sluice.gateway.server;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.config.ClientLimits;
import dev.sluice.gateway.logging.LogThrottle;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.tracing.Tracing;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sits right after the HTTP decoder and lets through only requests that mean one thing: a decoder
 * failure (request line or headers too long, a bare LF, an obs-fold line, several Content-Length
 * values, Content-Length with Transfer-Encoding, an invalid chunk size) becomes its status — 414,
 * 431 or 400 — as an OpenAI-style JSON error, and the connection is closed, since nothing after an
 * unparseable request can be framed; so does a Transfer-Encoding other than exactly {@code chunked},
 * or more header fields than {@code http.max_headers}. Nothing refused here reaches routing, and so
 * no worker.
 *
 * <p>It also keeps the connection's clock: from a request's first byte ({@link #bytesArrived}, told
 * by the handler before the decoder) to the end of its headers ({@code header_timeout}), then to the
 * end of its body ({@code body_timeout}), both answered 408 and closed; no deadline while the gateway
 * works on the request (its own timeouts govern that, and a long stream is not idle); then
 * {@code idle_timeout} until the next request's first byte, after which the connection is closed
 * quietly. {@link ClientConnections} sweeps the deadlines.
 */
final class RequestGuard extends ChannelDuplexHandler implements ClientConnections.Deadline {
    /** Every {@code reason} of {@code sluice_http_rejections_total} (exported at 0 from start-up). */
    static final java.util.List<String> REFUSAL_REASONS = java.util.List.of("request_line_too_long",
            "headers_too_large", "too_many_headers", "bad_framing", "header_timeout", "body_timeout",
            "too_many_connections", "body_too_large");

    private static final Logger log = LoggerFactory.getLogger(RequestGuard.class);
    private static final LogThrottle LINES = new LogThrottle(20);

    private enum Phase { IDLE, HEAD, BODY, SERVING, CLOSING }

    private final ClientConnections connections;
    private final ClientLimits limits;
    private final GatewayMetrics metrics;
    private final Tracing tracing;
    private ChannelHandlerContext ctx;
    private HttpRequest head; // the request being read (its headers name a client's trace), null between requests
    private Phase phase = Phase.IDLE;
    private long deadline; // System.nanoTime() past which the current phase has failed; 0 = none
    private int awaitingResponse; // complete requests whose final response has not been written yet

    RequestGuard(ClientConnections connections, GatewayMetrics metrics) {
        this(connections, metrics, Tracing.off());
    }

    RequestGuard(ClientConnections connections, GatewayMetrics metrics, Tracing tracing) {
        this.connections = connections;
        this.limits = connections.limits();
        this.metrics = metrics;
        this.tracing = tracing;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        deadline = System.nanoTime() + limits.idleTimeout().toNanos(); // a connection that never sends
        connections.track(this, ctx.channel().eventLoop());
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        connections.untrack(this, ctx.channel().eventLoop());
        phase = Phase.CLOSING;
        ctx.fireChannelInactive();
    }

    /** Bytes came in (called before decoding): an idle connection starts a request's head. */
    void bytesArrived() {
        if (phase == Phase.IDLE) {
            phase = Phase.HEAD;
            deadline = System.nanoTime() + limits.headerTimeout().toNanos();
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (phase == Phase.CLOSING) {
            ReferenceCountUtil.release(msg); // the rest of a refused connection's bytes
            return;
        }
        if (msg instanceof HttpRequest head && !head(head)) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (msg instanceof HttpContent content) {
            DecoderResult r = content.decoderResult();
            if (r.isFailure()) {
                ReferenceCountUtil.release(msg);
                refuse(decoderFailure(r.cause()), "bad_framing");
                return;
            }
            if (content instanceof LastHttpContent) {
                head = null;
                phase = Phase.SERVING;
                deadline = 0;
                awaitingResponse++;
            }
        }
        ctx.fireChannelRead(msg);
    }

    /** The head of a request: whether it may go on. */
    private boolean head(HttpRequest req) {
        head = req;
        DecoderResult r = req.decoderResult();
        if (r.isFailure()) {
            Throwable cause = r.cause();
            refuse(decoderFailure(cause), cause instanceof TooLongHttpLineException ? "request_line_too_long"
                    : cause instanceof TooLongHttpHeaderException ? "headers_too_large" : "bad_framing");
            return false;
        }
        HttpHeaders h = req.headers();
        if (h.size() > limits.maxHeaders()) {
            refuse(ApiError.httpRefused(HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "too_many_headers",
                    "request has " + h.size() + " header fields, more than " + limits.maxHeaders()
                            + " (http.max_headers)"), "too_many_headers");
            return false;
        }
        List<String> te = h.getAll(HttpHeaderNames.TRANSFER_ENCODING);
        if (!te.isEmpty() && (te.size() > 1 || !te.get(0).trim().equalsIgnoreCase("chunked")
                || h.contains(HttpHeaderNames.CONTENT_LENGTH))) {
            // anything but one "chunked" is a framing two parsers could read two ways (RFC 9112 6.1)
            refuse(ApiError.httpRefused(HttpResponseStatus.BAD_REQUEST, "bad_framing",
                    "Transfer-Encoding must be exactly 'chunked', alone, without Content-Length"), "bad_framing");
            return false;
        }
        if (phase == Phase.IDLE || phase == Phase.HEAD) {
            phase = Phase.BODY;
            deadline = System.nanoTime() + limits.bodyTimeout().toNanos();
        }
        return true;
    }

    private ApiError decoderFailure(Throwable cause) {
        if (cause instanceof TooLongHttpLineException) {
            return ApiError.httpRefused(HttpResponseStatus.REQUEST_URI_TOO_LONG, "request_line_too_long",
                    "request line longer than " + limits.maxInitialLine() + " bytes (http.max_initial_line)");
        }
        if (cause instanceof TooLongHttpHeaderException) {
            return ApiError.httpRefused(HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large",
                    "request headers larger than " + limits.maxHeaderSize() + " bytes (http.max_header_size)");
        }
        String why = String.valueOf(cause.getMessage());
        return ApiError.httpRefused(HttpResponseStatus.BAD_REQUEST, "bad_framing", "malformed HTTP request: "
                + (why.length() > 200 ? why.substring(0, 200) + "..." : why));
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof LastHttpContent && !(msg instanceof HttpResponse r
                && r.status().codeClass() == HttpStatusClass.INFORMATIONAL)) {
            responseEnded(); // a final response's last part (100 Continue is not one)
        }
        ctx.write(msg, promise);
    }

    private void responseEnded() {
        if (awaitingResponse > 0) {
            awaitingResponse--;
        }
        if (awaitingResponse == 0 && phase == Phase.SERVING) {
            phase = Phase.IDLE;
            deadline = System.nanoTime() + limits.idleTimeout().toNanos();
        }
    }

    @Override
    public boolean expiredAt(long now) {
        return deadline != 0 && phase != Phase.CLOSING && now - deadline >= 0;
    }

    /** Called by the sweep when the deadline has passed. */
    @Override
    public void expire() {
        switch (phase) {
            case HEAD -> refuse(ApiError.httpRefused(HttpResponseStatus.REQUEST_TIMEOUT, "header_timeout",
                    "request headers not received within " + limits.headerTimeout().toMillis()
                            + " ms (http.header_timeout)"), "header_timeout");
            case BODY -> refuse(ApiError.httpRefused(HttpResponseStatus.REQUEST_TIMEOUT, "body_timeout",
                    "request body not received within " + limits.bodyTimeout().toMillis()
                            + " ms (http.body_timeout)"), "body_timeout");
            case IDLE -> {
                phase = Phase.CLOSING;
                metrics.clientIdleClosed();
                ctx.close();
            }
            default -> deadline = 0;
        }
    }

    void refuse(ApiError error, String reason) {
        phase = Phase.CLOSING;
        deadline = 0;
        metrics.httpRefused(reason);
        if (LINES.tryAcquire(System.nanoTime()) >= 0) {
            log.info("client request refused remote={} status={} reason={} detail=\"{}\"", ctx.channel().remoteAddress(),
                    error.status().code(), reason, error.message());
        }
        HttpRequest h = head;
        head = null;
        tracing.refused(h == null ? null : h.headers(), h == null ? null : h.method().name(),
                h == null ? null : Routes.pathOf(h.uri()), error.status().code(), error.code(), error.message());
        // written from here, below routing: the response goes straight to the encoder, then a
        // lingering close (the client may still be sending; the rest is discarded in CLOSING)
        Responses.errorThenClose(ctx, error);
    }
}
