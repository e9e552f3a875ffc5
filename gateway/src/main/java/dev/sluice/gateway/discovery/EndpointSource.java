package dev.sluice.gateway.discovery;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import java.util.List;
import java.util.function.Consumer;

/**
 * A mechanism that finds one role list's workers and reports the whole current set each time it
 * changes. It knows nothing of admission or routing; the {@link WorkerDirectory} reconciles. A source
 * that cannot read its set (a failed DNS answer, a dropped watch) reports nothing: the last good set
 * stays in force.
 */
public interface EndpointSource extends AutoCloseable {
    WorkerSource kind();

    /** Starts finding; {@code sink} gets every new set, from the source's own thread. */
    void start(Consumer<List<WorkerEndpoint>> sink);

    @Override
    void close();
}
