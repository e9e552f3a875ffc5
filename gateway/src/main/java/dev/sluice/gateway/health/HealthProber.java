package dev.sluice.gateway.health;

import dev.sluice.gateway.config.GatewayConfig.HealthConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.upstream.UpstreamCall;
import dev.sluice.gateway.upstream.UpstreamFailure;
import dev.sluice.gateway.upstream.UpstreamListener;
import dev.sluice.gateway.upstream.UpstreamPool;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Probes every worker's {@code GET /health} on an interval. A worker becomes usable on its first
 * passing probe and unusable after {@code unhealthy_threshold} failures in a row; a connect
 * failure seen by a request marks it unusable at once, and the next passing probe restores it.
 */
public final class HealthProber implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(HealthProber.class);

    private final WorkerSet workers;
    private final UpstreamPool pool;
    private final EventLoop loop;
    private final HealthConfig config;
    private final Map<Worker, Integer> failures = new HashMap<>();
    private ScheduledFuture<?> task;

    public HealthProber(WorkerSet workers, UpstreamPool pool, EventLoop loop, HealthConfig config) {
        this.workers = workers;
        this.pool = pool;
        this.loop = loop;
        this.config = config;
    }

    public void start() {
        task = loop.scheduleWithFixedDelay(this::probeAll, 0, config.interval().toMillis(), TimeUnit.MILLISECONDS);
    }

    private void probeAll() {
        for (Worker w : workers.all()) {
            probe(w);
        }
    }

    private void probe(Worker w) {
        Probe p = new Probe(w);
        UpstreamCall call = new UpstreamCall(pool, w, p);
        p.timer = loop.schedule(() -> {
            call.cancel();
            p.result(false, "no answer within " + config.timeout().toMillis() + " ms");
        }, config.timeout().toMillis(), TimeUnit.MILLISECONDS);
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/health");
        req.headers().set(HttpHeaderNames.HOST, w.name()).setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
        call.start(loop, req);
    }

    private final class Probe implements UpstreamListener {
        private final Worker worker;
        private int status;
        private boolean done;
        ScheduledFuture<?> timer;

        Probe(Worker worker) {
            this.worker = worker;
        }

        @Override
        public void onResponseHead(HttpResponse head) {
            status = head.status().code();
        }

        @Override
        public void onContent(HttpContent content) {
            boolean last = content instanceof LastHttpContent;
            content.release();
            if (last) {
                result(status == 200, "status " + status);
            }
        }

        @Override
        public void onFailure(UpstreamFailure failure) {
            result(false, failure.label() + ": " + failure.detail());
        }

        void result(boolean healthy, String detail) {
            if (done) {
                return;
            }
            done = true;
            timer.cancel(false);
            boolean was = worker.isUsable();
            if (healthy) {
                failures.put(worker, 0);
                worker.markUsable(true);
                if (!was) {
                    log.info("worker usable role={} worker={}", worker.role().label(), worker.name());
                }
                return;
            }
            int n = failures.merge(worker, 1, Integer::sum);
            if (n >= config.unhealthyThreshold() || !was) {
                worker.markUsable(false);
                if (was || n == config.unhealthyThreshold()) {
                    log.warn("worker unusable role={} worker={} consecutive_failures={} detail=\"{}\"",
                            worker.role().label(), worker.name(), n, detail);
                }
            }
        }
    }

    @Override
    public void close() {
        if (task != null) {
            task.cancel(false);
        }
    }
}
