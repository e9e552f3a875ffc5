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
 */
final class ChannelClientSink implements ClientSink {
    private final ChannelHandlerContext ctx;
    private final String requestId;
    private final boolean keepAlive;
    private final GatewayMetrics metrics;
    private boolean committed;
    private boolean ended;
    private int status;

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
    public void sendFull(HttpResponseStatus s, CharSequence contentType, ByteBuf body) {
        sendFull(s, contentType, body, null);
    }

    private void sendFull(HttpResponseStatus s, CharSequence contentType, ByteBuf body, ApiError error) {
        if (ended || committed) {
            body.release();
            return;
        }
        committed = true;
        ended = true;
        status = s.code();
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, s, body);
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes())
                .set("X-Request-Id", requestId);
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
        status = s.code();
        HttpResponse res = new DefaultHttpResponse(HttpVersion.HTTP_1_1, s);
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType)
                .set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED)
                .set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE)
                .set("X-Request-Id", requestId)
                // tells nginx-style proxies in front of us not to buffer the stream either
                .set("X-Accel-Buffering", "no");
        HttpUtil.setKeepAlive(res, keepAlive);
        ctx.write(res, ctx.voidPromise());
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
