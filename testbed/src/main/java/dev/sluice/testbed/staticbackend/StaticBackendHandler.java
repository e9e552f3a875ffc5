package dev.sluice.testbed.staticbackend;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.TimeUnit;

/**
 * One connection of the static backend, behind an {@code HttpRequestDecoder} only: the answer is
 * chosen at the request line, written as preencoded bytes when the request's last content arrives
 * (the body is released unread), and flushed once per read batch, so pipelined requests share a
 * flush. With a delay, each answer is written that long after its request ended.
 */
final class StaticBackendHandler extends ChannelInboundHandlerAdapter {
    private final StaticResponses responses;
    private final long delayNanos;
    private ByteBuf answer;
    private long answerDelayNanos;
    private boolean keepAlive;
    private boolean unflushed;

    StaticBackendHandler(StaticResponses responses, long delayNanos) {
        this.responses = responses;
        this.delayNanos = delayNanos;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        try {
            if (msg instanceof HttpRequest req) {
                if (req.decoderResult().isFailure()) {
                    ctx.writeAndFlush(responses.badRequest()).addListener(ChannelFutureListener.CLOSE);
                    return;
                }
                keepAlive = HttpUtil.isKeepAlive(req);
                String uri = req.uri();
                int q = uri.indexOf('?');
                boolean post = HttpMethod.POST.equals(req.method());
                release(); // a request line without its end (should not happen): drop its answer
                answer = responses.forRequest(post, q < 0 ? uri : uri.substring(0, q), keepAlive);
                // the delay stands for model work: only POSTs wait for it, never the gateway's health checks
                answerDelayNanos = post ? delayNanos : 0;
            }
            if (msg instanceof LastHttpContent && answer != null) {
                ByteBuf out = answer;
                answer = null;
                boolean close = !keepAlive;
                if (answerDelayNanos > 0) {
                    ctx.executor().schedule(() -> send(ctx, out, close, true), answerDelayNanos, TimeUnit.NANOSECONDS);
                } else {
                    send(ctx, out, close, false);
                }
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    private void send(ChannelHandlerContext ctx, ByteBuf out, boolean close, boolean flush) {
        if (close) {
            ctx.writeAndFlush(out).addListener(ChannelFutureListener.CLOSE);
        } else if (flush) {
            ctx.writeAndFlush(out, ctx.voidPromise());
        } else {
            ctx.write(out, ctx.voidPromise());
            unflushed = true;
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (unflushed) {
            unflushed = false;
            ctx.flush();
        }
        ctx.fireChannelReadComplete();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        release();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        release();
        ctx.close(); // a reset by a client that left is routine for a benchmark backend: nothing to log
    }

    private void release() {
        if (answer != null) {
            answer.release();
            answer = null;
        }
    }
}
