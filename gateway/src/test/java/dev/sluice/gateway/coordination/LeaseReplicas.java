package dev.sluice.gateway.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.AdmissionObserver;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.TokenizerConfig;
import dev.sluice.gateway.config.CoordinationConfig;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import dev.sluice.gateway.routing.WorkerSet;
import io.netty.util.concurrent.DefaultEventExecutor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.LoggerFactory;

/**
 * Replicas' {@link FleetLeases} for the tests against real Redis deployments (cluster, TLS, passwords):
 * each with its own admission, workers and control loop, its {@link RedisLeaseStore} built from the
 * configuration as the gateway builds it; FleetLeases' log lines collected.
 */
final class LeaseReplicas implements AutoCloseable {
    static final int QUEUE = 30;

    private final List<AutoCloseable> closing = new ArrayList<>();
    private final ListAppender<ILoggingEvent> lines = new ListAppender<>();
    private final Logger logger = (Logger) LoggerFactory.getLogger(FleetLeases.class);

    LeaseReplicas() {
        lines.start();
        logger.addAppender(lines);
    }

    private static AdmissionConfig admission() {
        return new AdmissionConfig(QUEUE, 90_000, java.time.Duration.ofSeconds(30), 50_000, 6, 60_000, 12, 10_000,
                java.time.Duration.ofSeconds(1), java.time.Duration.ofSeconds(60), java.time.Duration.ofSeconds(30),
                List.of("normal"), "normal", Map.of(), new TokenizerConfig(Optional.empty(), 4.0, 4, 1));
    }

    /** A replica named {@code config.replicaId()}, started (renewing). */
    FleetLeases start(CoordinationConfig config) {
        String id = config.replicaId();
        WorkerSet workers = new WorkerSet(new WorkersConfig(
                List.of(new WorkerEndpoint("http://10.0.0.1:30000", "10.0.0.1", 30000, 8998)),
                List.of(new WorkerEndpoint("http://10.0.1.1:30001", "10.0.1.1", 30001, null))));
        DemandTally tally = new DemandTally(AdmissionObserver.NONE);
        AdmissionController admission = new AdmissionController(admission(), workers, tally, System::nanoTime);
        DefaultEventExecutor loop = new DefaultEventExecutor();
        closing.add(() -> loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS));
        FleetLeases leases = new FleetLeases(config, id, () -> id + ":8080",
                new RedisLeaseStore(config, RedisLeaseStore.commandTimeout(config)), admission, workers, tally, loop,
                System::nanoTime);
        closing.add(leases);
        leases.start();
        return leases;
    }

    static long queue(FleetLeases l) {
        return l.status().grants().getOrDefault("queue", -1L);
    }

    /** FleetLeases' log lines so far (formatted). */
    List<String> logLines() {
        synchronized (lines) { // the appender appends under its own lock
            return lines.list.stream().map(e -> e.getLevel() + " " + e.getFormattedMessage()).toList();
        }
    }

    static void await(String what, long seconds, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("within %d s: %s", seconds, what).isLessThan(deadline);
            Thread.sleep(20); // the pace of a poll with a deadline
        }
    }

    @Override
    public void close() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
        logger.detachAppender(lines);
    }
}
