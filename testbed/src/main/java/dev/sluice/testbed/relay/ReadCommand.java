package dev.sluice.testbed.relay;

import dev.sluice.testbed.sim.Transport;
import dev.sluice.testbed.cli.DurationConverter;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code relay-bench read}: opens streamed chat requests against a gateway or a worker and reads
 * them as fast as it can; after a warm-up, counts SSE events over a measurement window and
 * reports events per second, with the CPU time watched processes (and their named threads) spent
 * in the same window. One line of JSON on stdout.
 */
@Command(name = "read", mixinStandardHelpOptions = true,
        description = "Read long SSE streams as fast as possible; report events/s (and watched processes' CPU).")
final class ReadCommand implements Callable<Integer> {
    @Option(names = "--url", required = true, description = "http://host:port of the gateway or the worker")
    URI url;

    @Option(names = "--label", defaultValue = "run", description = "name of this run in the report")
    String label;

    @Option(names = "--streams", defaultValue = "4", description = "concurrent streams (default: ${DEFAULT-VALUE})")
    int streams;

    @Option(names = "--max-tokens", defaultValue = "2000000000", description = "tokens asked per stream (default: ${DEFAULT-VALUE}: endless)")
    long maxTokens;

    @Option(names = "--warmup", defaultValue = "5s", converter = DurationConverter.class)
    Duration warmup;

    @Option(names = "--duration", defaultValue = "20s", converter = DurationConverter.class)
    Duration duration;

    @Option(names = "--threads", defaultValue = "1", description = "reader event loop threads (default: ${DEFAULT-VALUE})")
    int threads;

    @Option(names = "--watch", description = "label=pid or label=pid:threadPrefix: CPU of that process (and of its threads "
            + "whose name starts with threadPrefix) during the window; repeatable")
    List<String> watch = new ArrayList<>();

    @Option(names = "--json", description = "also write the report to this file")
    Path json;

    @Override
    public Integer call() throws Exception {
        EventLoopGroup group = Transport.newGroup(threads, "reader");
        List<StreamCounter> counters = new ArrayList<>();
        List<Channel> channels = new ArrayList<>();
        try {
            for (int i = 0; i < streams; i++) {
                StreamCounter c = new StreamCounter(url, maxTokens);
                counters.add(c);
                channels.add(new Bootstrap().group(group).channel(Transport.socketChannel())
                        .option(ChannelOption.TCP_NODELAY, true).handler(c)
                        .connect(url.getHost(), url.getPort()).sync().channel());
            }
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (counters.stream().anyMatch(c -> c.status == 0) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            for (StreamCounter c : counters) {
                if (c.status != 200) {
                    System.err.println("relay-bench read: a stream was answered " + c.describeStatus());
                    return 1;
                }
            }
            Thread.sleep(warmup.toMillis());
            Map<String, ProcCpu.Sample> cpu0 = sampleWatched();
            ProcCpu.Sample self0 = ProcCpu.read(ProcessHandle.current().pid(), "reader");
            long events0 = sum(counters, true);
            long bytes0 = sum(counters, false);
            long t0 = System.nanoTime();
            Thread.sleep(duration.toMillis());
            long events1 = sum(counters, true);
            long bytes1 = sum(counters, false);
            long t1 = System.nanoTime();
            Map<String, ProcCpu.Sample> cpu1 = sampleWatched();
            ProcCpu.Sample self = ProcCpu.read(ProcessHandle.current().pid(), "reader").minus(self0);
            if (counters.stream().anyMatch(c -> c.closed)) {
                System.err.println("relay-bench read: a stream closed during the measurement");
                return 1;
            }
            double seconds = (t1 - t0) / 1e9;
            double events = events1 - events0;
            StringBuilder out = new StringBuilder();
            out.append(String.format(Locale.ROOT, "{\"label\":\"%s\",\"url\":\"%s\",\"streams\":%d,\"seconds\":%.3f,"
                            + "\"events\":%d,\"events_per_second\":%.0f,\"mib_per_second\":%.2f,\"reader_cpu_s\":%.2f",
                    label, url, streams, seconds, events1 - events0, events / seconds,
                    (bytes1 - bytes0) / seconds / (1 << 20), self.processSeconds()));
            for (String name : cpu0.keySet()) {
                ProcCpu.Sample d = cpu1.get(name).minus(cpu0.get(name));
                out.append(String.format(Locale.ROOT, ",\"%s_cpu_s\":%.2f,\"%s_threads_cpu_s\":%.2f,"
                                + "\"%s_threads_cpu_us_per_event\":%.3f,\"%s_cpu_us_per_event\":%.3f",
                        name, d.processSeconds(), name, d.threadSeconds(), name,
                        events == 0 ? 0 : d.threadSeconds() * 1e6 / events, name,
                        events == 0 ? 0 : d.processSeconds() * 1e6 / events));
            }
            out.append('}');
            System.out.println(out);
            if (json != null) {
                Files.writeString(json, out + "\n");
            }
            return 0;
        } finally {
            for (Channel ch : channels) {
                ch.close();
            }
            group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    private Map<String, ProcCpu.Sample> sampleWatched() {
        Map<String, ProcCpu.Sample> out = new LinkedHashMap<>();
        for (String w : watch) {
            String[] kv = w.split("=", 2);
            String[] pidPrefix = kv[1].split(":", 2);
            out.put(kv[0], ProcCpu.read(Long.parseLong(pidPrefix[0]), pidPrefix.length > 1 ? pidPrefix[1] : "\u0000"));
        }
        return out;
    }

    private static long sum(List<StreamCounter> counters, boolean events) {
        long n = 0;
        for (StreamCounter c : counters) {
            n += events ? c.events : c.bytes;
        }
        return n;
    }
}
