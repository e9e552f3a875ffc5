package dev.sluice.gateway.pd;

import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.channel.EventLoop;
import java.util.function.Supplier;

/**
 * What the gateway's own requests through a pair need (the stall panic's probes, the prefill rates'
 * calibration): the settings in force (protocol driver, limits), the worker connections, the abort sender,
 * the metrics, the loop they run on, and the model clients ask for.
 */
public record OwnRequestServices(Supplier<ExchangeSettings> settings, UpstreamPool pool, AbortSender aborts,
                                 GatewayMetrics metrics, EventLoop loop, ServedModel model) {

    /** The same services on another loop. */
    public OwnRequestServices on(EventLoop other) {
        return new OwnRequestServices(settings, pool, aborts, metrics, other, model);
    }

    /** An attempt's services under the settings {@code s} (read once per request). */
    AttemptServices attemptServices(ExchangeSettings s) {
        return new AttemptServices(pool, aborts, metrics, s.maxResponseBodyBytes(), s.timeouts().abort());
    }
}
