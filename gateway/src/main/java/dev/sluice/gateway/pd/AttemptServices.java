package dev.sluice.gateway.pd;

import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.upstream.UpstreamPool;
import java.time.Duration;

/**
 * What an attempt uses of the running gateway to talk to workers: connections, aborts, counters,
 * and the two limits it applies itself. Everything else (health, admission, deadlines) belongs to
 * the exchange.
 *
 * @param maxResponseBodyBytes the most of a whole (non-streamed) answer held in memory
 * @param abortTimeout         how long an abort or a release leg may take
 */
record AttemptServices(UpstreamPool pool, AbortSender aborts, GatewayMetrics metrics, long maxResponseBodyBytes,
                       Duration abortTimeout) {
}
