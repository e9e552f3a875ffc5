package dev.sluice.testbed.relay;

import dev.sluice.testbed.sim.Transport;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code relay-bench firehose}: runs a {@link FirehoseWorker} until SIGTERM or Ctrl-C. */
@Command(name = "firehose", mixinStandardHelpOptions = true,
        description = "Run a worker that streams token events as fast as the socket takes them (until stopped).")
final class FirehoseCommand implements Callable<Integer> {
    @Option(names = "--host", defaultValue = "127.0.0.1")
    String host;

    @Option(names = "--port", required = true)
    int port;

    @Option(names = "--threads", defaultValue = "1", description = "event loop threads (default: ${DEFAULT-VALUE})")
    int threads;

    @Option(names = "--default-tokens", defaultValue = "1000000",
            description = "events per stream when the request names no max_tokens (default: ${DEFAULT-VALUE})")
    long defaultTokens;

    @Override
    public Integer call() throws Exception {
        FirehoseWorker worker = new FirehoseWorker(host, port, threads, defaultTokens);
        CountDownLatch stop = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("firehose stopping streams_started=" + worker.streamsStarted.get() + " events_written="
                    + worker.eventsWritten.get());
            worker.close();
            stop.countDown();
        }, "firehose-stop"));
        System.out.println("firehose listening address=" + host + ":" + worker.port() + " threads=" + threads
                + " transport=" + (Transport.EPOLL ? "epoll" : "nio"));
        System.out.flush();
        stop.await();
        return 0;
    }
}
