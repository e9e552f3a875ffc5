package dev.sluice.gateway.pd;

import dev.sluice.gateway.config.Secret;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamFetch;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
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
    /** SGLang's --admin-api-key ({@code workers.admin_api_key_env}): /abort_request needs it once it is set. */
    private volatile Optional<Secret> adminKey = Optional.empty();
    private static final int MAX_ATTEMPTS = 3;
    private static final long RETRY_DELAY_MS = 20;

    public AbortSender(UpstreamPool pool, GatewayMetrics metrics, Duration timeout) {
        this.pool = pool;
        this.metrics = metrics;
        this.timeout = timeout;
    }

    /** Sets the key aborts carry (at start and on reload); empty: the worker's own API key, if any. */
    public void adminKey(Optional<Secret> key) {
        this.adminKey = Objects.requireNonNull(key, "key");
    }

    /**
     * Must be called on {@code loop}. One abort per item rid. The future completes when every
     * abort has been answered (or has failed or timed out): the worker has dropped the request.
     */
    public Future<Void> abort(EventLoop loop, Worker worker, java.util.List<String> rids) {
        Promise<Void> all = loop.newPromise();
        int[] left = {rids.size()};
        if (left[0] == 0) {
            return all.setSuccess(null);
        }
        for (String rid : rids) {
            send(loop, worker, rid, 1, System.nanoTime(), () -> {
                if (--left[0] == 0) {
                    all.trySuccess(null);
                }
            });
        }
        return all;
    }

    private void send(EventLoop loop, Worker worker, String rid, int attempt, long started, Runnable done) {
        // rids are gateway-made (hex and dashes): no JSON escaping needed
        Optional<Secret> key = adminKey.isPresent() ? adminKey : worker.authorization();
        UpstreamFetch.postJson(pool, loop, worker, "/abort_request", "{\"rid\":\"" + rid + "\"}", rid, timeout, key)
                .addListener(f -> {
                    UpstreamFetch.Result r = (UpstreamFetch.Result) f.getNow();
                    if (r.failure() != null && r.failure().startsWith("connect") && attempt < MAX_ATTEMPTS) {
                        // a refused or reset connect is often transient (a connection storm at the worker):
                        // an abort that does not arrive leaves GPU work running for nobody, so try again
                        loop.schedule(() -> send(loop, worker, rid, attempt + 1, started, done), RETRY_DELAY_MS,
                                TimeUnit.MILLISECONDS);
                        return;
                    }
                    String result = r.failure() != null ? (r.failure().startsWith("timeout") ? "timeout" : "failed")
                            : r.ok() ? "ok" : "error";
                    metrics.abortRequestSent(worker.role().label(), result);
                    log.info("abort_request rid={} role={} worker={} result={} attempts={} detail=\"{}\" ms={}", rid,
                            worker.role().label(), worker.name(), result, attempt,
                            r.failure() != null ? r.failure() : "status " + r.status(),
                            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
                    done.run();
                });
    }
}
