package dev.sluice.testbed.relay;

import dev.sluice.testbed.sim.Transport;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A worker that answers every streamed generation request with token events written as fast as the
 * socket takes them: no model, no scheduler, only backpressure (it writes while the channel is
 * writable and resumes when it drains). It answers the gateway's {@code /health},
 * {@code /health_generate}, {@code /get_load}, {@code /metrics} and {@code /abort_request} like an
 * idle SGLang server. Responses are written as raw bytes (no HTTP encoder), so the worker spends
 * next to nothing per event and the gateway is what gets measured.
 */
final class FirehoseWorker implements AutoCloseable {
    /** Events per prebuilt block: one write moves this many HTTP chunks. */
    private static final int BLOCK = 32;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ByteBuf BLOCK_BYTES = ChatWire.chunkedEvents(BLOCK);
    private static final ByteBuf ONE_EVENT = ChatWire.chunkedEvents(1);
    private static final ByteBuf STREAM_HEAD = Unpooled.unreleasableBuffer(Unpooled.copiedBuffer(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n"
                    + "cache-control: no-cache\r\n\r\n", StandardCharsets.US_ASCII));

    private final EventLoopGroup group;
    private final Channel server;
    private final long defaultTokens;
    final AtomicLong streamsStarted = new AtomicLong();
    final AtomicLong eventsWritten = new AtomicLong();

    FirehoseWorker(String host, int port, int threads, long defaultTokens) throws InterruptedException {
        this.defaultTokens = defaultTokens;
        this.group = Transport.newGroup(threads, "firehose");
        this.server = new ServerBootstrap().group(group).channel(Transport.serverChannel())
                .option(ChannelOption.SO_BACKLOG, 4096)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(new HttpRequestDecoder(), new HttpObjectAggregator(1 << 20), new Handler());
                    }
                }).bind(host, port).sync().channel();
    }

    int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    @Override
    public void close() {
        server.close().syncUninterruptibly();
        group.shutdownGracefully().syncUninterruptibly();
    }

    private static void respond(ChannelHandlerContext ctx, int status, String contentType, String body) {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        String head = "HTTP/1.1 " + status + (status == 200 ? " OK" : status == 400 ? " Bad Request" : " Not Found") + "\r\ncontent-type: " + contentType
                + "\r\ncontent-length: " + b.length + "\r\n\r\n";
        ctx.writeAndFlush(Unpooled.wrappedBuffer(head.getBytes(StandardCharsets.US_ASCII), b), ctx.voidPromise());
    }

    /** One connection: answers requests one at a time; a stream is pumped while the socket takes it. */
    private final class Handler extends ChannelInboundHandlerAdapter {
        private long remaining;
        private long tokens;
        private boolean streaming;
        private boolean pumping;
        private boolean again;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof FullHttpRequest req)) {
                ReferenceCountUtil.release(msg);
                return;
            }
            try {
                String path = req.uri().split("\\?", 2)[0];
                switch (path) {
                    case "/health", "/health_generate" -> respond(ctx, 200, "application/json", "{}");
                    case "/get_load" -> respond(ctx, 200, "application/json",
                            "[{\"dp_rank\":0,\"num_reqs\":0,\"num_waiting_reqs\":0,\"num_tokens\":0}]");
                    case "/metrics" -> respond(ctx, 200, "text/plain; version=0.0.4",
                            "sglang:num_queue_reqs{model_name=\"sim\"} 0\nsglang:num_running_reqs{model_name=\"sim\"} 0\n"
                                    + "sglang:token_usage{model_name=\"sim\"} 0.0\n");
                    case "/abort_request" -> respond(ctx, 200, "application/json", "{}");
                    case "/v1/chat/completions", "/v1/completions", "/generate" -> startStream(ctx, req.content());
                    default -> respond(ctx, 404, "application/json", "{\"error\":\"not found\"}");
                }
            } finally {
                req.release();
            }
        }

        private void startStream(ChannelHandlerContext ctx, ByteBuf body) {
            long max = defaultTokens;
            try {
                JsonNode n = JSON.readTree((java.io.InputStream) new ByteBufInputStream(body.duplicate()));
                if (n != null && n.path("max_tokens").canConvertToLong()) {
                    max = n.path("max_tokens").asLong();
                }
            } catch (IOException e) {
                respond(ctx, 400, "application/json", "{\"error\":\"bad json\"}");
                return;
            }
            streamsStarted.incrementAndGet();
            tokens = max;
            remaining = max;
            streaming = true;
            ctx.write(STREAM_HEAD.duplicate(), ctx.voidPromise());
            pump(ctx);
        }

        /** Writes while the channel is writable; re-entered from channelWritabilityChanged (looped, not recursed). */
        private void pump(ChannelHandlerContext ctx) {
            if (pumping) {
                again = true;
                return;
            }
            pumping = true;
            try {
                do {
                    again = false;
                    Channel ch = ctx.channel();
                    long written = 0;
                    while (streaming && remaining > 0 && ch.isWritable()) {
                        if (remaining >= BLOCK) {
                            ctx.write(BLOCK_BYTES.duplicate(), ctx.voidPromise());
                            remaining -= BLOCK;
                            written += BLOCK;
                        } else {
                            ctx.write(ONE_EVENT.duplicate(), ctx.voidPromise());
                            remaining--;
                            written++;
                        }
                    }
                    eventsWritten.addAndGet(written);
                    if (streaming && remaining == 0) {
                        streaming = false;
                        ctx.write(ChatWire.end(tokens), ctx.voidPromise());
                    }
                    ctx.flush();
                } while (again && streaming && ctx.channel().isActive());
            } finally {
                pumping = false;
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (streaming && ctx.channel().isWritable()) {
                pump(ctx);
            }
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            streaming = false;
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
