package dev.sluice.testbed.load;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The queue over a run, read every {@link #INTERVAL_MS} ms from {@code /metrics}: through the gateway,
 * Sluice's queue depth (every priority class) and pending prompt tokens; straight to the workers,
 * each prefill's waiting plus running requests (a PD prefill's waiting requests are in its
 * bootstrap queue), with no token figure. A failed read is a sample with nulls.
 */
final class TimelineSampler implements AutoCloseable {
    static final long INTERVAL_MS = 500;
    /** Micrometer's {@code sluice.queue.depth} and {@code sluice.pending.prompt.tokens} in Prometheus text. */
    static final String GATEWAY_QUEUE = "sluice_queue_depth";
    static final String GATEWAY_PENDING_TOKENS = "sluice_pending_prompt_tokens";
    static final String PREFILL_WAITING = "sglang:num_prefill_bootstrap_queue_reqs";
    static final String PREFILL_RUNNING = "sglang:num_running_reqs";

    private record Sample(long tMs, Double queueDepth, Double pendingTokens) {
    }

    private final boolean gateway;
    private final List<URI> targets;
    private final long zeroNanos;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(400)).build();
    private final List<Sample> samples = new ArrayList<>();
    private final ScheduledExecutorService clock = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "load-timeline");
        t.setDaemon(true);
        return t;
    });

    /** Starts sampling now; {@code zeroNanos} is the run's time zero ({@code t_ms} = 0). */
    TimelineSampler(boolean gateway, List<URI> targets, long zeroNanos) {
        this.gateway = gateway;
        this.targets = List.copyOf(targets);
        this.zeroNanos = zeroNanos;
        clock.scheduleAtFixedRate(this::sample, 0, INTERVAL_MS, TimeUnit.MILLISECONDS);
    }

    private void sample() {
        long t = (System.nanoTime() - zeroNanos) / 1_000_000;
        Double depth = 0.0;
        Double tokens = gateway ? 0.0 : null;
        try {
            for (URI target : targets) {
                Map<String, Double> m = WorkerProbe.parse(get(target));
                if (gateway) {
                    depth += m.getOrDefault(GATEWAY_QUEUE, 0.0);
                    tokens += m.getOrDefault(GATEWAY_PENDING_TOKENS, 0.0);
                } else {
                    depth += m.getOrDefault(PREFILL_WAITING, 0.0) + m.getOrDefault(PREFILL_RUNNING, 0.0);
                }
            }
        } catch (Exception e) {
            depth = null;
            tokens = null;
        }
        synchronized (samples) {
            samples.add(new Sample(t, depth, tokens));
        }
    }

    private String get(URI target) throws Exception {
        HttpResponse<String> res = http.send(HttpRequest.newBuilder(target.resolve("/metrics"))
                .timeout(Duration.ofMillis(INTERVAL_MS - 50)).GET().build(), HttpResponse.BodyHandlers.ofString());
        if (res.statusCode() != 200) {
            throw new IllegalStateException(target + "/metrics answered " + res.statusCode());
        }
        return res.body();
    }

    /** Stops sampling (waits for a read in progress). */
    @Override
    public void close() throws InterruptedException {
        clock.shutdown();
        clock.awaitTermination(2, TimeUnit.SECONDS);
    }

    /** {@code [{t_ms, queue_depth, pending_tokens}]}, nulls where unknown. */
    ArrayNode toJson() {
        ArrayNode out = JsonNodeFactory.instance.arrayNode();
        synchronized (samples) {
            for (Sample s : samples) {
                ObjectNode o = out.addObject();
                o.put("t_ms", s.tMs());
                if (s.queueDepth() == null) {
                    o.putNull("queue_depth");
                } else {
                    o.put("queue_depth", Math.round(s.queueDepth()));
                }
                if (s.pendingTokens() == null) {
                    o.putNull("pending_tokens");
                } else {
                    o.put("pending_tokens", Math.round(s.pendingTokens()));
                }
            }
        }
        return out;
    }
}
