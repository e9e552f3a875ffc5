package dev.sluice.gateway.metrics;

import dev.sluice.gateway.config.GatewayConfig.TelemetryConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.routing.WorkerTelemetry;
import dev.sluice.gateway.routing.WorkerTelemetry.Field;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Locale;

/**
 * Per-worker gauges: up, in flight, and the worker's own telemetry re-exported as
 * {@code sluice_worker_*} (NaN when stale or never read, so a dead exporter never looks idle),
 * with the telemetry's age and whether the last poll worked.
 */
final class WorkerMetrics {
    private WorkerMetrics() {
    }

    static void bind(MeterRegistry registry, WorkerSet workers, TelemetryConfig telemetry) {
        for (Worker w : workers.all()) {
            bind(registry, w, telemetry);
        }
    }

    /** Removes the gauges of a worker a reload removed (its counters stay: their history is still true). */
    static void unbind(MeterRegistry registry, Worker w) {
        for (io.micrometer.core.instrument.Meter m : List.copyOf(registry.getMeters())) {
            if (m instanceof Gauge && w.name().equals(m.getId().getTag("worker"))
                    && w.role().label().equals(m.getId().getTag("role"))) {
                registry.remove(m);
            }
        }
    }

    static void bind(MeterRegistry registry, Worker w, TelemetryConfig telemetry) {
        long staleNanos = telemetry.staleAfter().toNanos();
        {
            String[] tags = {"role", w.role().label(), "worker", w.name()};
            Gauge.builder("sluice.worker.up", w, x -> x.isAvailable() ? 1 : 0)
                    .description("1 when the worker counts as capacity (healthy, degraded or half-open), 0 when ejected or draining").tags(tags).register(registry);
            for (WorkerState state : WorkerState.values()) {
                Gauge.builder("sluice.worker.state", w, x -> x.state() == state ? 1 : 0)
                        .description("1 for the state the worker is in (healthy, degraded, ejected, half_open, suspect, draining)")
                        .tags(tags).tag("state", state.label()).register(registry);
            }
            Gauge.builder("sluice.worker.stall.probe.due", w, x -> x.suspectProbe()
                            .map(p -> (p.nextNanos() - System.nanoTime()) / 1e9).orElse(Double.NaN))
                    .baseUnit("seconds").description("while the worker is suspect of a silent stall: time by which the "
                            + "gateway's next probe of it will have started (the Retry-After its refusals carry); NaN "
                            + "when not suspect").tags(tags).register(registry);
            Gauge.builder("sluice.worker.misconfigured", w, x -> x.identity().misconfigured() ? 1 : 0)
                    .description("1 when the worker's own description (/server_info) contradicts its configured role or "
                            + "bootstrap port").tags(tags).register(registry);
            Gauge.builder("sluice.inflight.requests", w, Worker::inflight)
                    .description("requests dispatched to the worker and not yet ended").tags(tags).register(registry);
            Gauge.builder("sluice.worker.telemetry.up", w, x -> x.telemetry().lastPollOk() ? 1 : 0)
                    .description("1 when the last poll of the worker's /metrics succeeded").tags(tags).register(registry);
            Gauge.builder("sluice.worker.telemetry.age", w, x -> x.telemetry().ageSeconds(System.nanoTime()))
                    .baseUnit("seconds").description("time since the worker's telemetry was last read (+Inf: never)")
                    .tags(tags).register(registry);
            for (Field f : Field.values()) {
                Gauge.builder(name(f), w, x -> x.telemetry().value(f, System.nanoTime(), staleNanos))
                        .description(description(f)).tags(tags).register(registry);
            }
        }
    }

    private static String name(Field f) {
        return switch (f) {
            case GEN_THROUGHPUT -> "sluice.worker.gen.throughput.tokens.per.second";
            // mirrors of the worker's own counters; gauges here, hence no _total suffix from Micrometer
            case TRANSFER_FAILED_TOTAL -> "sluice.worker.transfer.failed";
            case BOOTSTRAP_FAILED_TOTAL -> "sluice.worker.bootstrap.failed";
            case PROMPT_TOKENS_TOTAL -> "sluice.worker.prompt.tokens";
            default -> "sluice.worker." + f.name().toLowerCase(Locale.ROOT).replace('_', '.');
        };
    }

    private static String description(Field f) {
        if (f == Field.PREFILL_COMPUTE_RATE) {
            return "prefill tokens per second of GPU forward time, from the worker's sglang:realtime_tokens_total and "
                    + "sglang:gpu_execution_seconds_total between two polls; NaN when not exported or stale";
        }
        if (f == Field.PROMPT_TOKENS_TOTAL) {
            return "prompt tokens the worker took in since it started, computed and cached alike (its "
                    + "sglang:realtime_tokens_total prefill_compute + prefill_cache, or vllm:prompt_tokens_total); "
                    + "NaN when not exported or stale";
        }
        return f.names().isEmpty() ? "from the worker's /v1/loads or /get_load (num_waiting_reqs, summed over ranks)"
                : "the worker's " + String.join(" or ", f.names()) + (f.over() == WorkerTelemetry.Over.MAX
                ? " (the fullest rank)" : " (summed over ranks)") + "; NaN when stale";
    }
}
