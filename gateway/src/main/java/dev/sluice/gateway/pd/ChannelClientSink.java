package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.api.ErrorHeaders;
import dev.sluice.gateway.metrics.GatewayMetrics;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;

/**
 * A client's connection as a {@link ClientSink}: either one full response, or a committed stream
 * of chunks. An error after the stream started becomes a last {@code data: {"error": ...}} event
 * that is valid JSON, then {@code data: [DONE]}, as SGLang's own servers end a failed stream.
 *
 * <p>A stream whose client asked for queue updates is opened early ({@link #openStream}): its
 * 200 and headers go out at admission and SSE comments while it waits, but it is not
 * <em>committed</em> until its first token, so a failure before then is still retried. An error
 * it cannot be told with a status any more is an {@code event: error} with what the status
 * response would have said (and its {@code retry_after}), then {@code data: [DONE]}.
 */
final class ChannelClientSink implements ClientSink {
    private final ChannelHandlerContext ctx;
    private final String requestId;
    private final boolean keepAlive;
    private final GatewayMetrics metrics;
    private boolean committed;
    private boolean headersOut;
    private boolean ended;
    private int status;
    private long queueWaitMillis;

    ChannelClientSink(ChannelHandlerContext ctx, String requestId, boolean keepAlive, GatewayMetrics metrics) {
        this.ctx = ctx;
        this.requestId = requestId;
        this.keepAlive = keepAlive;
        this.metrics = metrics;
    }

    @Override
    public boolean committed() {
        return committed;
    }

    @Override
    public boolean ended() {
        return ended;
    }

    @Override
    public int status() {
        return status;
    }

    @Override
    public boolean writable() {
        return ctx.channel().isWritable();
    }

    @Override
    public boolean opened() {
        return headersOut;
    }

    @Override
    public void queueWait(long millis) {
        queueWaitMillis = millis;
    }

    @Override
    public void sendFull(HttpResponseStatus s, CharSequence contentType, ByteBuf body) {
        sendFull(s, contentType, body, null);
    }

    private void sendFull(HttpResponseStatus s, CharSequence contentType, ByteBuf body, ApiError error) {
        if (ended || committed) {
            body.release();
            return;
        }
        if (headersOut) {
            // a stream opened early whose worker answered with a whole body: it goes out as the stream's content
            committed = true;
            write(body);
            end();
            return;
        }
        committed = true;
        ended = true;
        status = s.code();
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, s, body);
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes())
                .set("X-Request-Id", requestId)
                .set(QUEUE_WAIT_MS, queueWaitMillis);
        if (error != null) {
            ErrorHeaders.apply(res.headers(), error);
        }
        HttpUtil.setKeepAlive(res, keepAlive);
        ctx.writeAndFlush(res).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
    }

    @Override
    public void sendError(ApiError error) {
        if (ended) {
            return;
        }
        if (!committed && headersOut) {
            committed = true;
            write(Unpooled.copiedBuffer(ClientSink.errorEvent(error), StandardCharsets.UTF_8));
            end();
            return;
        }
        if (!committed) {
            ByteBuf body = error.toJsonBytes(ctx.alloc());
            sendFull(error.status(), HttpHeaderValues.APPLICATION_JSON, body, error);
            return;
        }
        String events = "data: " + error.toJson() + "\n\ndata: [DONE]\n\n";
        write(Unpooled.copiedBuffer(events, StandardCharsets.UTF_8));
        end();
    }

    @Override
    public void commitStream(HttpResponseStatus s, String contentType) {
        committed = true;
        if (headersOut) {
            return; // opened at admission (queue updates): the first token is the first content
        }
        status = s.code();
        ctx.write(streamHead(s, contentType, true), ctx.voidPromise());
    }

    /**
     * Sends a stream's 200 and headers before its first token (queue updates); flushed at once.
     * Not committed: a failure before the first token is still retried, and told as an error event.
     */
    @Override
    public void openStream() {
        if (ended || committed || headersOut) {
            return;
        }
        headersOut = true;
        status = HttpResponseStatus.OK.code();
        ctx.writeAndFlush(streamHead(HttpResponseStatus.OK, "text/event-stream", false), ctx.voidPromise());
    }

    /** One SSE comment line ({@code : text}), flushed: between an early open and the first token only. */
    @Override
    public void comment(String text) {
        if (headersOut && !committed && !ended && ctx.channel().isActive()) {
            write(Unpooled.copiedBuffer(": " + text + "\n\n", StandardCharsets.UTF_8));
        }
    }

    private HttpResponse streamHead(HttpResponseStatus s, String contentType, boolean queueWaitKnown) {
        HttpResponse res = new DefaultHttpResponse(HttpVersion.HTTP_1_1, s);
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType)
                .set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED)
                .set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE)
                .set("X-Request-Id", requestId)
                // tells nginx-style proxies in front of us not to buffer the stream either
                .set("X-Accel-Buffering", "no");
        if (queueWaitKnown) {
            res.headers().set(QUEUE_WAIT_MS, queueWaitMillis); // an early stream says it in a comment instead
        }
        HttpUtil.setKeepAlive(res, keepAlive);
        return res;
    }

    /**
     * Writes one chunk and flushes; ownership of {@code data} passes to the channel. Nothing is
     * allocated per chunk beyond the buffer: the encoder frames a bare {@code ByteBuf} as a chunk
     * of the committed stream, and the void promise sends a failed write to the pipeline's
     * exceptionCaught, which closes the connection (what CLOSE_ON_FAILURE did, without a promise).
     */
    @Override
    public void write(ByteBuf data) {
        ctx.writeAndFlush(data, ctx.voidPromise());
        ChannelOutboundBuffer out = ctx.channel().unsafe().outboundBuffer();
        if (out != null) {
            metrics.clientBuffered(out.totalPendingWriteBytes());
        }
    }

    @Override
    public void end() {
        if (ended) {
            return;
        }
        ended = true;
        ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
    }

    /** The client left: nothing more is written. */
    @Override
    public void abandon() {
        ended = true;
    }
}
