package dev.sluice.gateway.upstream;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.AttributeKey;
import io.netty.util.ReferenceCountUtil;

/**
 * Last handler of an upstream connection: hands every response object to the call that owns the
 * connection now. Bytes that arrive while nobody owns it (an idle pooled connection) mean the
 * connection is in an unknown state: they are released and the connection is closed.
 */
final class UpstreamHandler extends ChannelInboundHandlerAdapter {
    static final AttributeKey<UpstreamCall> CALL = AttributeKey.valueOf("sluice.call");

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        UpstreamCall call = ctx.channel().attr(CALL).get();
        if (call == null || !(msg instanceof HttpObject)) {
            ReferenceCountUtil.release(msg);
            ctx.close();
            return;
        }
        call.onMessage((HttpObject) msg);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        UpstreamCall call = ctx.channel().attr(CALL).getAndSet(null);
        if (call != null) {
            call.onClosed();
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        // Idle too long in the pool: close before the worker's own keep-alive timeout races us.
        if (evt instanceof IdleStateEvent && ctx.channel().attr(CALL).get() == null) {
            ctx.close();
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        UpstreamCall call = ctx.channel().attr(CALL).getAndSet(null);
        if (call != null) {
            call.onError(cause);
        }
        ctx.close();
    }
}
