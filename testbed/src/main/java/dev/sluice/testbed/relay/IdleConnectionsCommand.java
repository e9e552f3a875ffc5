package dev.sluice.testbed.relay;

import dev.sluice.testbed.sim.Transport;
import dev.sluice.testbed.cli.DurationConverter;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.util.AttributeKey;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code relay-bench idle}: opens many keep-alive connections, sends one cheap request on each
 * ({@code GET /health}, answered by the gateway itself), reads the answer, and then leaves them
 * idle. Once all are answered it prints {@code ready ...} (and writes {@code --ready-file}), holds
 * them for {@code --hold}, and closes them. The gateway's memory is sampled from outside.
 */
@Command(name = "idle", mixinStandardHelpOptions = true,
        description = "Open many keep-alive connections, one GET each, then hold them idle.")
final class IdleConnectionsCommand implements Callable<Integer> {
    @Option(names = "--url", required = true)
    URI url;

    @Option(names = "--connections", defaultValue = "10000")
    int connections;

    @Option(names = "--path", defaultValue = "/health", description = "the one request sent on each connection")
    String path;

    @Option(names = "--concurrent-connects", defaultValue = "256")
    int concurrentConnects;

    @Option(names = "--hold", defaultValue = "60s", converter = DurationConverter.class)
    Duration hold;

    @Option(names = "--ready-file", description = "written once every connection has its answer")
    Path readyFile;

    private static final AttributeKey<Semaphore> PERMIT = AttributeKey.valueOf("relay.permit");
    private static final AttributeKey<Boolean> ANSWERED = AttributeKey.valueOf("relay.answered");

    private final AtomicInteger answered = new AtomicInteger();
    private final AtomicInteger closed = new AtomicInteger();
    private final AtomicInteger failed = new AtomicInteger();

    @Override
    public Integer call() throws Exception {
        EventLoopGroup group = Transport.newGroup(1, "idle-client");
        List<Channel> channels = new ArrayList<>(connections);
        Semaphore connecting = new Semaphore(concurrentConnects);
        ChannelHandler handler = new OneRequest();
        Bootstrap b = new Bootstrap().group(group).channel(Transport.socketChannel())
                .option(ChannelOption.TCP_NODELAY, true).attr(PERMIT, connecting).handler(handler);
        long start = System.nanoTime();
        try {
            for (int i = 0; i < connections; i++) {
                connecting.acquire();
                ChannelFuture f = b.connect(url.getHost(), url.getPort());
                channels.add(f.channel());
                f.addListener(done -> {
                    if (!done.isSuccess()) {
                        failed.incrementAndGet();
                        if (f.channel().attr(PERMIT).getAndSet(null) != null) {
                            connecting.release();
                        }
                    }
                });
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (answered.get() + failed.get() < connections && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            String ready = String.format(Locale.ROOT, "ready connections=%d answered=%d failed=%d closed=%d seconds=%.1f",
                    connections, answered.get(), failed.get(), closed.get(), (System.nanoTime() - start) / 1e9);
            System.out.println(ready);
            System.out.flush();
            if (readyFile != null) {
                Files.writeString(readyFile, ready + "\n");
            }
            Thread.sleep(hold.toMillis());
            System.out.printf(Locale.ROOT, "{\"connections\":%d,\"answered\":%d,\"failed\":%d,\"closed_by_server\":%d}%n",
                    connections, answered.get(), failed.get(), closed.get());
            return answered.get() == connections && closed.get() == 0 ? 0 : 1;
        } finally {
            for (Channel ch : channels) {
                ch.close();
            }
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /** Sends the request once connected; the first bytes back count as the answer (the permit goes back). */
    @ChannelHandler.Sharable
    private final class OneRequest extends ChannelInboundHandlerAdapter {
        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ctx.writeAndFlush(ChatWire.get(url, path));
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            try {
                if (ctx.channel().attr(ANSWERED).setIfAbsent(Boolean.TRUE) == null) {
                    if (b.toString(StandardCharsets.US_ASCII).startsWith("HTTP/1.1 200")) {
                        answered.incrementAndGet();
                    } else {
                        failed.incrementAndGet();
                    }
                    Semaphore p = ctx.channel().attr(PERMIT).getAndSet(null);
                    if (p != null) {
                        p.release();
                    }
                }
            } finally {
                b.release();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            closed.incrementAndGet();
            Semaphore p = ctx.channel().attr(PERMIT).getAndSet(null);
            if (p != null) {
                p.release();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
