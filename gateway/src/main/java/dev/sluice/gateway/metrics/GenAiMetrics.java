package dev.sluice.gateway.metrics;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;

/**
 * OpenTelemetry's GenAI server metrics, beside the gateway's own: {@code
 * gen_ai.server.time_to_first_token}, {@code gen_ai.server.time_per_output_token} and {@code
 * gen_ai.server.request.duration} (in Prometheus: {@code gen_ai_server_time_to_first_token_seconds}
 * ...), by {@code gen_ai.operation.name}, with the buckets the semantic conventions advise. The
 * request's model is not a label: clients write it, and a label must stay bounded. With {@code pools:},
 * each pool's request series carry its {@code pool} (the configured name, bounded); a request refused
 * before its pool was known carries {@code pool=""} ({@link PoolLabels#POOLED}).
 */
public final class GenAiMetrics {
    // the explicit bucket boundaries advised by the GenAI semantic conventions (gen-ai-metrics.md)
    private static final double[] TTFT = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
            2.5, 5.0, 7.5, 10.0};
    private static final double[] TPOT = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5};
    private static final double[] DURATION = {0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24,
            20.48, 40.96, 81.92};
    private final MeterRegistry registry;
    private final String pool; // null: the gateway's own (no pool, or not yet known)
    private final ConcurrentMap<String, Timer> ttft = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Timer> tpot = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Timer> duration = new ConcurrentHashMap<>();

    GenAiMetrics(MeterRegistry registry, String pool) {
        this.registry = registry;
        this.pool = pool;
    }

    /** {@code gen_ai.operation.name} of a route label: chat, or text_completion (completions, SGLang's /generate). */
    static String operation(String route) {
        return "chat_completions".equals(route) ? "chat" : "text_completion";
    }

    void firstToken(String route, Duration d) {
        timer(ttft, route, "gen_ai.server.time_to_first_token", "Time to generate the first token (GenAI "
                + "semantic conventions; here: request received to first token relayed)", TTFT).record(d);
    }

    void requestDuration(String route, Duration d) {
        timer(duration, route, "gen_ai.server.request.duration", "GenAI server request duration (GenAI semantic "
                + "conventions; time to last byte)", DURATION).record(d);
    }

    /**
     * A good answer of {@code outputTokens} tokens over {@code sequences} sequences (a batch's prompts
     * times {@code n}): the time per output token after the first, of one sequence. The sequences
     * decode side by side, one token each per step, so the time is divided by a sequence's own count
     * (the total / sequences), not by the total.
     */
    public void timePerOutputToken(String route, long durationMillis, long ttftMillis, long totalOutputTokens,
                                   int sequences) {
        long outputTokens = totalOutputTokens / Math.max(1, sequences);
        if (outputTokens > 1 && ttftMillis >= 0 && durationMillis >= ttftMillis) {
            timer(tpot, route, "gen_ai.server.time_per_output_token", "Time per output token generated after the "
                    + "first one (GenAI semantic conventions)", TPOT).record(
                    TimeUnit.MILLISECONDS.toNanos(durationMillis - ttftMillis) / (outputTokens - 1), TimeUnit.NANOSECONDS);
        }
    }

    private Timer timer(ConcurrentMap<String, Timer> cache, String route, String name, String description,
                        double[] bucketsSeconds) {
        Timer t = cache.get(route);
        if (t == null) {
            t = cache.computeIfAbsent(route, r -> {
                Duration[] slos = new Duration[bucketsSeconds.length];
                for (int i = 0; i < slos.length; i++) {
                    slos[i] = Duration.ofNanos(Math.round(bucketsSeconds[i] * 1e9));
                }
                Timer.Builder b = Timer.builder(name).description(description).tag("gen_ai.operation.name", operation(r));
                return (pool == null ? b : b.tag(PoolLabels.TAG, pool)).serviceLevelObjectives(slos).register(registry);
            });
        }
        return t;
    }
}
