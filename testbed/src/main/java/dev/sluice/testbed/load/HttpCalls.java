package dev.sluice.testbed.load;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import java.net.URI;

/**
 * One request per connection: a client that gives up closes its connection, which is the only
 * signal a gateway or an SGLang server gets; pooling would hide it.
 */
final class HttpCalls {
    private HttpCalls() {
    }

    static int port(URI uri) {
        return uri.getPort() > 0 ? uri.getPort() : "https".equals(uri.getScheme()) ? 443 : 80;
    }

    static ChannelFuture open(EventLoopGroup group, URI base, ChannelHandler handler) {
        return new Bootstrap().group(group).channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpClientCodec()).addLast(handler);
                    }
                })
                .connect(base.getHost(), port(base));
    }

    static FullHttpRequest get(URI base, String path) {
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, path);
        req.headers().set(HttpHeaderNames.HOST, base.getHost() + ":" + port(base)).setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
        return req;
    }

    static FullHttpRequest post(URI base, String path, byte[] json) {
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, path,
                Unpooled.wrappedBuffer(json));
        req.headers().set(HttpHeaderNames.HOST, base.getHost() + ":" + port(base))
                .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
                .set(HttpHeaderNames.ACCEPT, "text/event-stream, application/json")
                .setInt(HttpHeaderNames.CONTENT_LENGTH, json.length);
        return req;
    }
}
