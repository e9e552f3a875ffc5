package dev.sluice.testbed.sim;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;

/**
 * A decode item's long poll to the bootstrap server of the prefill its body names
 * ({@code bootstrap_host}:{@code bootstrap_port}): real HTTP over loopback, on the decode's event
 * loop. Every outcome is reported to the decode unless the item has moved on ({@code kvChannel}
 * no longer this connection).
 */
final class KvFetch extends SimpleChannelInboundHandler<FullHttpResponse> {
    private final DecodeServer server;
    private final SimItem item;
    private boolean answered;

    private KvFetch(DecodeServer server, SimItem item) {
        this.server = server;
        this.item = item;
    }

    static void start(DecodeServer server, SimItem item) {
        if (item.bootstrapHost == null || item.bootstrapHost.isBlank()) {
            server.loop.execute(() -> server.kvFailed(item, "the request names no bootstrap_host"));
            return;
        }
        String peer = item.bootstrapHost + ":" + item.bootstrapPort;
        ChannelFuture connect = new Bootstrap().group(server.loop).channel(Transport.socketChannel())
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(server.cfg.kvWait().toMillis(), 10_000))
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpClientCodec()).addLast(new HttpObjectAggregator(1 << 20))
                                .addLast(new KvFetch(server, item));
                    }
                })
                .connect(item.bootstrapHost, item.bootstrapPort);
        Channel ch = connect.channel();
        item.kvChannel = ch;
        connect.addListener(f -> {
            if (item.kvChannel != ch) {
                ch.close();
                return;
            }
            if (!f.isSuccess()) {
                server.kvFailed(item, "cannot reach the bootstrap server " + peer + ": " + f.cause());
                return;
            }
            String uri = "/kv/" + item.room + "?rid=" + java.net.URLEncoder.encode(item.rid, StandardCharsets.UTF_8);
            if (server.faults.kvFails(item.room)) {
                uri += "&" + BootstrapServer.FAIL_PARAM + "=true"; // the handoff fails on both sides
            }
            FullHttpRequest get = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, uri);
            get.headers().set(HttpHeaderNames.HOST, peer).setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
            ch.writeAndFlush(get);
        });
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse res) {
        answered = true;
        ctx.close();
        if (item.kvChannel != ctx.channel()) {
            return;
        }
        if (res.status().code() == 200) {
            server.kvArrived(item);
        } else {
            String why = res.content().toString(StandardCharsets.UTF_8);
            try {
                why = SseWriter.JSON.readTree(why).path("error").asText(why);
            } catch (Exception e) {
                // keep the raw body
            }
            server.kvFailed(item, "prefill " + item.bootstrapHost + ":" + item.bootstrapPort + " answered "
                    + res.status().code() + ": " + why);
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (!answered && item.kvChannel == ctx.channel()) {
            server.kvFailed(item, "the bootstrap connection to " + item.bootstrapHost + ":" + item.bootstrapPort
                    + " closed before the KV arrived");
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }
}
