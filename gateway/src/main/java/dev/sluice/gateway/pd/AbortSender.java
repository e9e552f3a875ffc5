package dev.sluice.gateway.pd;

import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamFetch;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.channel.EventLoop;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends SGLang's {@code POST /abort_request {"rid": ...}} to a worker that still holds a request
 * the gateway gave up on, so that neither half keeps GPU time or KV memory for nobody. The
 * result is counted ({@code sluice_abort_requests_sent_total{role,result}}) and logged.
 */
public final class AbortSender {
    private static final Logger log = LoggerFactory.getLogger(AbortSender.class);

    private final UpstreamPool pool;
    private final GatewayMetrics metrics;
    private final Duration timeout;

    public AbortSender(UpstreamPool pool, GatewayMetrics metrics, Duration timeout) {
        this.pool = pool;
        this.metrics = metrics;
        this.timeout = timeout;
    }

    /** Must be called on {@code loop}. One abort per item rid. */
    public void abort(EventLoop loop, Worker worker, Iterable<String> rids) {
        for (String rid : rids) {
            long started = System.nanoTime();
            // rids are gateway-made (hex and dashes): no JSON escaping needed
            UpstreamFetch.postJson(pool, loop, worker, "/abort_request", "{\"rid\":\"" + rid + "\"}", rid, timeout)
                    .addListener(f -> {
                        UpstreamFetch.Result r = (UpstreamFetch.Result) f.getNow();
                        String result = r.failure() != null ? (r.failure().startsWith("timeout") ? "timeout" : "failed")
                                : r.ok() ? "ok" : "error";
                        metrics.abortRequestSent(worker.role().label(), result);
                        log.info("abort_request rid={} role={} worker={} result={} detail=\"{}\" ms={}", rid,
                                worker.role().label(), worker.name(), result,
                                r.failure() != null ? r.failure() : "status " + r.status(),
                                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
                    });
        }
    }
}
