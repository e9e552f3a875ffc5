package dev.sluice.testbed.staticbackend;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * A backend that costs as little as an HTTP/1.1 server can: one event loop thread (accepting and
 * serving), native epoll when available, keep-alive, and one fixed answer per route written from a
 * preencoded buffer ({@link StaticResponses}). Proxy benchmarks put it behind each proxy so that
 * what they measure is the proxy, not the backend. Any POST gets a fixed chat completion (with
 * {@code kv_transfer_params}, as a vLLM NIXL prefill answers, when asked), the GETs a gateway polls
 * ({@code /health}, {@code /health_generate}, {@code /get_load}, {@code /metrics}, info routes) get
 * small 200s. An optional delay holds every POST answer (health checks stay immediate), to make a
 * slow worker for overload tests.
 */
public final class StaticBackend implements AutoCloseable {
    /** What the backend answers and how fast. */
    public record Options(String host, int port, boolean kvTransferParams, Duration delay) {
        public Options {
            Objects.requireNonNull(host, "host");
            Objects.requireNonNull(delay, "delay");
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port: " + port + " (expected: 0-65535)");
            }
            if (delay.isNegative()) {
                throw new IllegalArgumentException("delay: " + delay + " (expected: >= 0)");
            }
        }
    }

    private static final boolean EPOLL = Epoll.isAvailable();

    private final EventLoopGroup loop;
    private final StaticResponses responses;
    private final Channel server;

    private StaticBackend(EventLoopGroup loop, StaticResponses responses, Channel server) {
        this.loop = loop;
        this.responses = responses;
        this.server = server;
    }

    /** Binds and starts serving; blocks the caller (never an event loop) until bound. */
    public static StaticBackend start(Options options) throws InterruptedException {
        EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("static-backend", false),
                EPOLL ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
        StaticResponses responses = new StaticResponses(options.kvTransferParams());
        long delayNanos = options.delay().toNanos();
        Class<? extends ServerChannel> channel = EPOLL ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        try {
            Channel server = new ServerBootstrap().group(loop).channel(channel)
                    .option(ChannelOption.SO_BACKLOG, 1024)
                    .option(ChannelOption.SO_REUSEADDR, true)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast("decoder", new HttpRequestDecoder())
                                    .addLast("static", new StaticBackendHandler(responses, delayNanos));
                        }
                    })
                    .bind(options.host(), options.port()).sync().channel();
            return new StaticBackend(loop, responses, server);
        } catch (InterruptedException | RuntimeException e) {
            loop.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
            responses.close();
            throw e;
        }
    }

    public int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    /** Size of the POST answer's body in bytes. */
    public int completionBodyBytes() {
        return responses.completionBodyBytes();
    }

    public static String transport() {
        return EPOLL ? "epoll" : "nio";
    }

    @Override
    public void close() {
        server.close().awaitUninterruptibly();
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly();
        responses.close();
    }
}
