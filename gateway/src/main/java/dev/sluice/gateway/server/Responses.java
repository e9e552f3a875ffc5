package dev.sluice.gateway.server;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.api.ErrorHeaders;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.channel.socket.DuplexChannel;
import java.util.concurrent.TimeUnit;

/** Whole responses the gateway answers itself (errors, health, metrics). */
public final class Responses {
    private Responses() {
    }

    public static ChannelFuture error(ChannelHandlerContext ctx, ApiError error, boolean keepAlive) {
        ByteBuf body = error.toJsonBytes(ctx.alloc());
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, error.status(), body);
        ErrorHeaders.apply(res.headers(), error);
        return send(ctx, res, HttpHeaderValues.APPLICATION_JSON, keepAlive);
    }

    /**
     * A refusal after which the connection cannot go on (the client may still be sending: a body
     * too large, bytes after a malformed head). Closing at once would make the kernel answer the
     * unread bytes with a reset, which can destroy the response before the client reads it; so the
     * gateway half-closes (its FIN follows the response), discards what still arrives, and closes
     * a second later: a lingering close, as Apache and nginx do.
     */
    public static void errorThenClose(ChannelHandlerContext ctx, ApiError error) {
        ByteBuf body = error.toJsonBytes(ctx.alloc());
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, error.status(), body);
        ErrorHeaders.apply(res.headers(), error);
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes());
        HttpUtil.setKeepAlive(res, false);
        ctx.writeAndFlush(res).addListener(f -> {
            Channel ch = ctx.channel();
            if (f.isSuccess() && ch instanceof DuplexChannel duplex && ch.isActive()) {
                duplex.shutdownOutput();
                ch.eventLoop().schedule(() -> ch.close(), LINGER_MILLIS, TimeUnit.MILLISECONDS);
            } else {
                ch.close();
            }
        });
    }

    private static final long LINGER_MILLIS = 1000;

    public static ChannelFuture json(ChannelHandlerContext ctx, HttpResponseStatus status, String json, boolean keepAlive) {
        return text(ctx, status, HttpHeaderValues.APPLICATION_JSON, json, keepAlive);
    }

    public static ChannelFuture text(ChannelHandlerContext ctx, HttpResponseStatus status, CharSequence contentType,
                                     String text, boolean keepAlive) {
        return send(ctx, status, contentType, ByteBufUtil.writeUtf8(ctx.alloc(), text), keepAlive);
    }

    public static ChannelFuture send(ChannelHandlerContext ctx, HttpResponseStatus status, CharSequence contentType,
                                     ByteBuf body, boolean keepAlive) {
        return send(ctx, new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, body), contentType, keepAlive);
    }

    private static ChannelFuture send(ChannelHandlerContext ctx, FullHttpResponse res, CharSequence contentType,
                                      boolean keepAlive) {
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, res.content().readableBytes());
        HttpUtil.setKeepAlive(res, keepAlive);
        ChannelFuture f = ctx.writeAndFlush(res);
        f.addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        if (!keepAlive) {
            f.addListener(ChannelFutureListener.CLOSE);
        }
        return f;
    }
}
