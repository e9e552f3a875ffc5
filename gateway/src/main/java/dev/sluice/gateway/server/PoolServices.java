package dev.sluice.gateway.server;

import dev.sluice.gateway.admin.RecentErrors;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.pd.InFlight;
import dev.sluice.gateway.tracing.Tracing;
import dev.sluice.gateway.transport.Transport;
import dev.sluice.gateway.upstream.UpstreamPool;
import java.util.Set;
import java.util.function.Supplier;

/**
 * What every model pool shares: the threads, the connections to the workers (one pool of
 * connections per worker, whichever pool the worker is in), the metrics registry (each pool has periodic
 * tasks of its own, to stop with it), tracing, the recent errors, the requests in flight, and the client listener's address (a
 * replica's name in the fleet).
 *
 * @param defaultPool the name of the pool that keeps the configured state file as it is
 */
record PoolServices(Transport transport, ServerLoops loops, UpstreamPool upstream, GatewayMetrics metrics,
                    RecentErrors recentErrors, Set<InFlight> live, Tracing tracing,
                    Supplier<String> listenAddress, String defaultPool) {
}
