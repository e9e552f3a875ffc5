package dev.sluice.testbed.sim;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;

/**
 * One listening socket of a simulated server and the connections it accepted, so that the server
 * can be killed (listener and every open connection closed, as when a process dies) and started
 * again on the same port. Accepted connections live on the server's event loop; the connection
 * set is confined to it.
 */
final class Listener {
    private final String host;
    private final EventLoopGroup acceptGroup;
    private final EventLoop loop;
    private final Consumer<SocketChannel> pipeline;
    private final Set<Channel> connections = new LinkedHashSet<>();
    private volatile Channel serverChannel;
    /** The port of the first successful bind: restarts reuse it, and it stays readable while killed. */
    private volatile int port = -1;
    private volatile boolean open;

    Listener(String host, EventLoopGroup acceptGroup, EventLoop loop, Consumer<SocketChannel> pipeline) {
        this.host = Objects.requireNonNull(host, "host");
        this.acceptGroup = Objects.requireNonNull(acceptGroup, "acceptGroup");
        this.loop = Objects.requireNonNull(loop, "loop");
        this.pipeline = Objects.requireNonNull(pipeline, "pipeline");
    }

    /**
     * Starts listening on {@code requested} (0: an ephemeral port), or on the remembered port once
     * one is known. Does not block: callers off the event loop wait on the returned future, which
     * completes after the port is recorded.
     */
    ChannelFuture bind(int requested) {
        int p = port >= 0 ? port : requested;
        open = true;
        ChannelFuture f = new ServerBootstrap().group(acceptGroup, loop).channel(Transport.serverChannel())
                // a restart binds right after the kill, while the killed connections sit in TIME_WAIT
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        accepted(ch);
                    }
                })
                .bind(host, p);
        serverChannel = f.channel();
        // the bind future's waiters may wake before its listeners run: complete our own after them
        ChannelPromise bound = f.channel().newPromise();
        f.addListener(done -> {
            if (done.isSuccess()) {
                if (port < 0) {
                    port = ((InetSocketAddress) f.channel().localAddress()).getPort();
                }
                bound.setSuccess();
            } else {
                if (serverChannel == f.channel()) {
                    open = false;
                }
                bound.setFailure(done.cause());
            }
        });
        return bound;
    }

    /** Runs on the event loop when a connection registers there. */
    private void accepted(SocketChannel ch) {
        if (!open) {
            ch.close(); // accepted just before the kill, registered just after it
            return;
        }
        connections.add(ch);
        ch.closeFuture().addListener(f -> connections.remove(ch));
        pipeline.accept(ch);
    }

    /**
     * Closes the listener and every open connection (event loop only). The connections' handlers
     * see {@code channelInactive} as for any client that left. Returns the close futures.
     */
    List<ChannelFuture> close() {
        open = false;
        List<ChannelFuture> closing = new ArrayList<>();
        Channel server = serverChannel;
        if (server != null) {
            closing.add(server.close());
        }
        for (Channel ch : new ArrayList<>(connections)) {
            closing.add(ch.close());
        }
        connections.clear();
        return closing;
    }

    /** The bound port, also while killed; -1 before the first bind. */
    int port() {
        return port;
    }

    boolean isOpen() {
        return open;
    }

    /** The current (or last) listening channel; null before the first bind. */
    Channel serverChannel() {
        return serverChannel;
    }

    /** Open connections (event loop only). */
    int connections() {
        return connections.size();
    }
}
