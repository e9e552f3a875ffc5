package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
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
 * A decode item's fetch of its KV from the prefill that computed it: an SGLang decode's long poll
 * to the prefill's bootstrap server, a vLLM decode's request to the prefill's KV side channel. Real
 * HTTP over loopback, on the decode's event loop. Every outcome is reported to the {@link Receiver}
 * unless the item has moved on ({@code kvChannel} no longer this connection).
 */
final class KvFetch extends SimpleChannelInboundHandler<FullHttpResponse> {
    /** What the decode does with the outcome (event loop). */
    interface Receiver {
        /** 200: {@code answer} is the parsed body, null when it was not JSON. */
        void arrived(SimItem item, JsonNode answer);

        void failed(SimItem item, String reason);
    }

    /** How messages name the peer: SGLang's bootstrap server or vLLM's KV side channel. */
    enum Peer {
        BOOTSTRAP("the bootstrap server", "the bootstrap connection"),
        SIDE_CHANNEL("the KV side channel", "the KV side channel connection");

        final String server;
        final String connection;

        Peer(String server, String connection) {
            this.server = server;
            this.connection = connection;
        }
    }

    private final Receiver receiver;
    private final SimItem item;
    private final String peer;
    private final Peer kind;
    private boolean answered;

    private KvFetch(Receiver receiver, SimItem item, String peer, Peer kind) {
        this.receiver = receiver;
        this.item = item;
        this.peer = peer;
        this.kind = kind;
    }

    /** Connects to {@code host:port} and asks for {@code uri} (already encoded). */
    static void start(SimWorker server, SimItem item, String host, int port, String uri, Peer kind,
                      Receiver receiver) {
        start(server, item, host, port, uri, kind, receiver, 1);
    }

    /**
     * A connection closed under us while connecting is retried a few times, as a real transfer engine
     * retries a transient connection failure; it is not the KV transfer failing (and must not look
     * like one caused by whoever drives the cluster). A refused or timed-out connect still fails.
     */
    private static final int CONNECT_ATTEMPTS = 3;

    private static void start(SimWorker server, SimItem item, String host, int port, String uri, Peer kind,
                              Receiver receiver, int attempt) {
        String peer = host + ":" + port;
        ChannelFuture connect = new Bootstrap().group(server.loop).channel(Transport.socketChannel())
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(server.cfg.kvWait().toMillis(), 10_000))
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpClientCodec()).addLast(new HttpObjectAggregator(1 << 20))
                                .addLast(new KvFetch(receiver, item, peer, kind));
                    }
                })
                .connect(host, port);
        Channel ch = connect.channel();
        item.kvChannel = ch;
        connect.addListener(f -> {
            if (item.kvChannel != ch) {
                ch.close();
                return;
            }
            if (!f.isSuccess()) {
                if (f.cause() instanceof java.nio.channels.ClosedChannelException && attempt < CONNECT_ATTEMPTS) {
                    server.loop.schedule(() -> {
                        if (item.kvChannel == ch) {
                            start(server, item, host, port, uri, kind, receiver, attempt + 1);
                        }
                    }, 5, java.util.concurrent.TimeUnit.MILLISECONDS);
                    return;
                }
                receiver.failed(item, "cannot reach " + kind.server + " " + peer + ": " + f.cause());
                return;
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
        String text = res.content().toString(StandardCharsets.UTF_8);
        JsonNode json = null;
        try {
            json = SseWriter.JSON.readTree(text);
        } catch (Exception e) {
            // not JSON: keep the raw body
        }
        if (res.status().code() == 200) {
            receiver.arrived(item, json);
        } else {
            String why = json == null ? text : json.path("error").asText(text);
            receiver.failed(item, "prefill " + peer + " answered " + res.status().code() + ": " + why);
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (!answered && item.kvChannel == ctx.channel()) {
            receiver.failed(item, kind.connection + " to " + peer + " closed before the KV arrived");
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }
}
