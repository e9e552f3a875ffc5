package dev.sluice.testbed.load;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.LastHttpContent;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/**
 * The prefill half as SGLang's router treats it: sent, then read to the end and dropped. Nobody
 * closes it when the client leaves (the router never aborts it), so it runs until the prefill
 * answers. Reports how the answer ended: {@code ok}, {@code kv_transfer_error},
 * {@code bootstrap_failed}, {@code aborted}, {@code error_<status>}, {@code connection} or, when a
 * router closed it before its end ({@link #closeByRouter}), {@code closed_by_router}.
 */
final class DiscardCall extends SimpleChannelInboundHandler<HttpObject> {
    private static final int TAIL = 4096;
    private final FullHttpRequest request;
    private final Consumer<String> done;
    private final StringBuilder tail = new StringBuilder();
    private static final io.netty.util.AttributeKey<DiscardCall> CALL = io.netty.util.AttributeKey.valueOf("discardCall");
    private int status;
    private boolean finished;
    private boolean closedByRouter;

    private DiscardCall(FullHttpRequest request, Consumer<String> done) {
        this.request = request;
        this.done = done;
    }

    static Channel start(EventLoopGroup group, URI base, String path, byte[] body, Consumer<String> done) {
        return start(group, base, HttpCalls.post(base, path, body), done);
    }

    static Channel start(EventLoopGroup group, URI base, FullHttpRequest request, Consumer<String> done) {
        DiscardCall c = new DiscardCall(request, done);
        ChannelFuture f = HttpCalls.open(group, base, c);
        f.addListener(x -> {
            if (!x.isSuccess()) {
                c.request.release();
                c.finish("connection");
            }
        });
        f.channel().closeFuture().addListener(x -> c.finish(c.closedByRouter ? "closed_by_router" : "connection"));
        f.channel().attr(CALL).set(c);
        return f.channel();
    }

    /**
     * The router closes this half itself (mini_lb's aiohttp session closing): reported as
     * {@code closed_by_router} unless the answer had already ended. Any thread.
     */
    static void closeByRouter(Channel ch) {
        ch.eventLoop().execute(() -> {
            DiscardCall c = ch.attr(CALL).get();
            if (c != null) {
                c.closedByRouter = true;
            }
            ch.close();
        });
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        ctx.writeAndFlush(request);
        ctx.fireChannelActive();
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) {
        if (msg instanceof HttpResponse res) {
            status = res.status().code();
        }
        if (msg instanceof HttpContent content) {
            tail.append(content.content().toString(StandardCharsets.UTF_8));
            if (tail.length() > TAIL) {
                tail.delete(0, tail.length() - TAIL);
            }
            if (msg instanceof LastHttpContent) {
                finish(classify());
                ctx.close();
            }
        }
    }

    private String classify() {
        String t = tail.toString();
        if (t.contains("KVTransferError")) {
            return "kv_transfer_error";
        }
        if (t.contains("BootstrapFailed")) {
            return "bootstrap_failed";
        }
        if (status != 200) {
            return "error_" + status;
        }
        if (t.contains("\"error\"")) {
            return "stream_error";
        }
        return t.contains("\"abort\"") ? "aborted" : "ok";
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }

    private void finish(String how) {
        if (!finished) {
            finished = true;
            done.accept(how);
        }
    }
}
