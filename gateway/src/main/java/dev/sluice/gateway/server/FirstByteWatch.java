package dev.sluice.gateway.server;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

/**
 * Before the HTTP decoder: tells the connection's {@link RequestGuard} that bytes arrived, so a
 * request's header clock starts at its first byte (a slowloris client trickling a header never
 * gets a decoded request for the guard to see).
 */
final class FirstByteWatch extends ChannelInboundHandlerAdapter {
    private final RequestGuard guard;

    FirstByteWatch(RequestGuard guard) {
        this.guard = guard;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        guard.bytesArrived();
        ctx.fireChannelRead(msg);
    }
}
