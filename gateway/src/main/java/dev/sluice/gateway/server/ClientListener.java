package dev.sluice.gateway.server;

import dev.sluice.gateway.config.ClientLimits;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.tls.ServerTls;
import dev.sluice.gateway.transport.Transport;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpServerKeepAliveHandler;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * The client listener: the socket options and the pipeline every client connection gets, in
 * named steps (TLS, flush consolidation, first-byte watch, strict codec, guard, keep-alive, body
 * aggregation, then the {@link FrontHandler}).
 */
final class ClientListener {
    // Armeria's values: enough to keep a stream flowing, small enough that a slow client costs little
    private static final WriteBufferWaterMark CLIENT_WATERMARK = new WriteBufferWaterMark(64 * 1024, 128 * 1024);
    private static final int CLIENT_SEND_BUFFER = 128 * 1024;

    private final ChannelGroup channels = new DefaultChannelGroup("clients", GlobalEventExecutor.INSTANCE);
    private Channel server;

    /** Binds (the one blocking step, on the caller's thread at start-up, never on a loop). */
    void bind(GatewayConfig config, Transport transport, EventLoopGroup boss, EventLoopGroup io,
              ClientConnections clients, ServerTls tls, GatewayMetrics metrics, FrontServices front)
            throws InterruptedException {
        ClientLimits limits = config.http().client();
        int maxBody = (int) Math.min(Integer.MAX_VALUE, config.http().maxRequestBodyBytes());
        // strict framing: no bare LF, no duplicate Content-Length, RFC 9112's Transfer-Encoding rules;
        // what Netty lets through that could still be read two ways, RequestGuard refuses
        HttpDecoderConfig decoderConfig = new HttpDecoderConfig()
                .setMaxInitialLineLength(limits.maxInitialLine())
                .setMaxHeaderSize(limits.maxHeaderSize())
                .setValidateHeaders(true)
                .setStrictLineParsing(true)
                .setAllowDuplicateContentLengths(false)
                .setUseRfc9112TransferEncoding(true);
        ServerBootstrap b = new ServerBootstrap()
                .group(boss, io)
                .channel(transport.serverChannel())
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, CLIENT_WATERMARK)
                // a fixed send buffer: the kernel's autotuning (up to 4 MiB) would swallow megabytes of
                // a stream to a slow reader before the watermark, and so backpressure, ever engaged
                .childOption(ChannelOption.SO_SNDBUF, CLIENT_SEND_BUFFER)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        if (!clients.admit(ch, front.pd().tracing())) {
                            return; // past http.max_connections: refused and closing, no pipeline built
                        }
                        channels.add(ch);
                        RequestGuard guard = new RequestGuard(clients, metrics, front.pd().tracing());
                        if (tls != null) {
                            SslHandler handler = tls.newHandler(ch.alloc());
                            handler.handshakeFuture().addListener(f -> {
                                if (!f.isSuccess()) {
                                    metrics.tlsHandshakeFailed(); // a scanner, a plain-HTTP client, an old protocol
                                }
                            });
                            ch.pipeline().addLast("tls", handler);
                        }
                        ch.pipeline()
                                .addLast("flush", new FlushConsolidationHandler(256, true))
                                .addLast("bytes", new FirstByteWatch(guard))
                                .addLast("codec", new StrictServerCodec(decoderConfig))
                                .addLast("guard", guard)
                                .addLast("keepalive", new HttpServerKeepAliveHandler())
                                .addLast("aggregator", new BodyLimitAggregator(maxBody, metrics))
                                .addLast("front", new FrontHandler(front));
                    }
                });
        server = b.bind(config.listen().host(), config.listen().port()).sync().channel();
    }

    InetSocketAddress address() {
        return (InetSocketAddress) server.localAddress();
    }

    /** Stops accepting, then closes every client connection. */
    void close() {
        if (server != null) {
            server.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        }
        channels.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
    }
}
