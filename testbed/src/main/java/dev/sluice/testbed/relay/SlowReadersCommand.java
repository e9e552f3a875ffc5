package dev.sluice.testbed.relay;

import dev.sluice.testbed.sim.Transport;
import dev.sluice.testbed.cli.DurationConverter;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.FixedRecvByteBufAllocator;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code relay-bench slow-readers}: many endless streams whose clients read slowly (a fixed number
 * of bytes per second, with a small socket receive buffer, as a phone on a poor link), so that the
 * gateway has to hold back the worker instead of buffering. Prints a status line every few seconds
 * and a JSON summary at the end; the memory of the gateway is sampled from outside
 * ({@code scripts/bench-relay}).
 */
@Command(name = "slow-readers", mixinStandardHelpOptions = true,
        description = "Hold many SSE streams open, each read at a fixed slow rate.")
final class SlowReadersCommand implements Callable<Integer> {
    @Option(names = "--url", required = true, description = "http://host:port of the gateway")
    URI url;

    @Option(names = "--streams", defaultValue = "1000")
    int streams;

    @Option(names = "--ramp", defaultValue = "200", description = "new streams per second (default: ${DEFAULT-VALUE})")
    int ramp;

    @Option(names = "--bytes-per-second", defaultValue = "1024", description = "read rate of each client (default: ${DEFAULT-VALUE})")
    int bytesPerSecond;

    @Option(names = "--read-size", defaultValue = "256", description = "bytes per read (default: ${DEFAULT-VALUE})")
    int readSize;

    @Option(names = "--rcvbuf", defaultValue = "4096", description = "SO_RCVBUF of each client (default: ${DEFAULT-VALUE})")
    int rcvbuf;

    @Option(names = "--duration", defaultValue = "60s", converter = DurationConverter.class,
            description = "how long to hold all streams once they are open (default: ${DEFAULT-VALUE})")
    Duration duration;

    @Option(names = "--report-every", defaultValue = "5s", converter = DurationConverter.class)
    Duration reportEvery;

    @Override
    public Integer call() throws Exception {
        EventLoopGroup group = Transport.newGroup(1, "slow-reader");
        List<StreamCounter> counters = new ArrayList<>();
        List<Channel> channels = new ArrayList<>();
        long periodMicros = Math.max(1, 1_000_000L * readSize / bytesPerSecond);
        Bootstrap b = new Bootstrap().group(group).channel(Transport.socketChannel())
                .option(ChannelOption.AUTO_READ, false)
                .option(ChannelOption.SO_RCVBUF, rcvbuf)
                .option(ChannelOption.RCVBUF_ALLOCATOR, new FixedRecvByteBufAllocator(readSize).maxMessagesPerRead(1));
        long start = System.nanoTime();
        long nextReport = start;
        try {
            for (int i = 0; i < streams; i++) {
                StreamCounter c = new StreamCounter(url, 2_000_000_000L);
                counters.add(c);
                ChannelFuture f = b.clone().handler(c).connect(url.getHost(), url.getPort());
                channels.add(f.channel());
                f.addListener(done -> {
                    if (done.isSuccess()) {
                        Channel ch = f.channel();
                        // a read of readSize bytes every period, starting at a random phase
                        var task = ch.eventLoop().scheduleAtFixedRate(ch::read,
                                ThreadLocalRandom.current().nextLong(periodMicros), periodMicros, TimeUnit.MICROSECONDS);
                        ch.closeFuture().addListener(x -> task.cancel(false));
                    }
                });
                long due = start + (long) ((i + 1) * 1e9 / ramp);
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                if (System.nanoTime() >= nextReport) {
                    report(counters, start);
                    nextReport += reportEvery.toNanos();
                }
            }
            long end = System.nanoTime() + duration.toNanos();
            while (System.nanoTime() < end) {
                Thread.sleep(Math.min(reportEvery.toMillis(), Math.max(1, (end - System.nanoTime()) / 1_000_000)));
                report(counters, start);
            }
            long ok = counters.stream().filter(c -> c.status == 200 && !c.closed).count();
            long bytes = counters.stream().mapToLong(c -> c.bytes).sum();
            long events = counters.stream().mapToLong(c -> c.events).sum();
            System.out.printf(Locale.ROOT, "{\"streams\":%d,\"open_and_streaming_at_end\":%d,\"closed\":%d,\"bytes\":%d,"
                            + "\"events\":%d,\"seconds\":%.1f,\"bytes_per_second_per_stream\":%.0f}%n", streams, ok,
                    counters.stream().filter(c -> c.closed).count(), bytes, events, (System.nanoTime() - start) / 1e9,
                    bytes / ((System.nanoTime() - start) / 1e9) / streams);
            return ok == streams ? 0 : 1;
        } finally {
            for (Channel ch : channels) {
                ch.close();
            }
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    private static void report(List<StreamCounter> counters, long start) {
        long answered = counters.stream().filter(c -> c.status != 0).count();
        long ok = counters.stream().filter(c -> c.status == 200).count();
        long closed = counters.stream().filter(c -> c.closed).count();
        long bytes = counters.stream().mapToLong(c -> c.bytes).sum();
        long events = counters.stream().mapToLong(c -> c.events).sum();
        System.out.printf(Locale.ROOT, "t=%.1fs opened=%d answered=%d ok=%d closed=%d bytes=%d events=%d%n",
                (System.nanoTime() - start) / 1e9, counters.size(), answered, ok, closed, bytes, events);
        System.out.flush();
    }
}
