package dev.sluice.gateway.tracing;

import dev.sluice.gateway.config.TracingConfig;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.handler.codec.http.HttpHeaders;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.ToLongFunction;
import java.util.logging.Level;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's OpenTelemetry tracing: its sampler (the SDK's), its spans ({@link RecordedSpan},
 * written by the event loops without the SDK's span machinery), its OTLP exporter behind a bounded
 * batch queue, and the metrics of what it lost. Off ({@link #off()}) unless {@code tracing:} is
 * configured; then every request gets a {@link RequestTrace}. Export never blocks a request: a
 * span ends into a bounded {@link SpanExport} (for OTLP/HTTP encoded at once, where it ended) that
 * one background thread sends in batches; what does not fit is dropped and counted.
 *
 * <p>Live ({@link #live}): a reload that changes {@code tracing:} (adds it, removes it, another
 * endpoint or sample ratio) {@link #prepare}s a new {@link TracingEngine} before anything of the reload
 * is applied, and commits it with the rest: requests arriving from then on get the new setting. A
 * request keeps the engine it started with; the old engine exports what those requests end for
 * {@link #RETIRE_AFTER}, then sends what it holds and stops: spans its requests end later (a stream
 * longer than that) are dropped and counted ({@code reason="exporter_retired"}). The counters add up
 * every engine's, so they never go back.
 */
public final class Tracing implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Tracing.class);
    /** How long an engine a reload replaced keeps exporting the spans of the requests that started under it. */
    static final Duration RETIRE_AFTER = Duration.ofSeconds(30);
    private static final String DROPPED = "Spans the gateway did not deliver to the collector: queue_full (the export "
            + "queue was full: 1 MiB of encoded spans for OTLP/HTTP, " + TracingEngine.MAX_QUEUE + " spans for gRPC), "
            + "export_failed (the collector could not be reached in time or refused the batch), exporter_retired (a "
            + "request that outlived the exporter a reload replaced by " + RETIRE_AFTER.toSeconds() + " s ended them)";
    private static final Tracing OFF = new Tracing(null, RETIRE_AFTER);
    // the exporter logs every failed batch through java.util.logging; WatchedExporter logs the outage once
    private static final java.util.logging.Logger EXPORTER_JUL = java.util.logging.Logger.getLogger("io.opentelemetry.exporter");

    static final TextMapGetter<HttpHeaders> HEADERS = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(HttpHeaders carrier) {
            return carrier.names();
        }

        @Override
        public String get(HttpHeaders carrier, String key) {
            return carrier == null ? null : carrier.get(key);
        }
    };

    private final MeterRegistry registry; // null: off for good (Tracing.off())
    private final Duration retireAfter;
    private volatile TracingEngine engine; // null: off now
    private final List<TracingEngine> retiring = new CopyOnWriteArrayList<>();
    private final LongAdder afterRetirement = new LongAdder(); // spans ended after their engine stopped
    /**
     * The exported counters, each over every engine: what stopped engines counted (added as each stops,
     * under this) plus what the running ones count now.
     */
    private record Count(String name, String reason, ToLongFunction<TracingEngine> running, LongAdder stopped) {
    }

    private final List<Count> counts = List.of(
            new Count("sluice.tracing.spans.dropped", "queue_full", TracingEngine::queueFull, new LongAdder()),
            new Count("sluice.tracing.spans.dropped", "export_failed", TracingEngine::exportFailed, new LongAdder()),
            new Count("sluice.tracing.spans.dropped", "exporter_retired", e -> 0, afterRetirement),
            new Count("sluice.tracing.spans.exported", null, TracingEngine::exported, new LongAdder()));
    private boolean metered; // under this: the counters are registered (once an engine is in force)
    private boolean closed; // under this

    private Tracing(MeterRegistry registry, Duration retireAfter) {
        this.registry = registry;
        this.retireAfter = retireAfter;
    }

    /** Tracing off for good: every request gets {@link RequestTrace#NONE}, nothing is built or sent. */
    public static Tracing off() {
        return OFF;
    }

    /** Starts tracing for {@code config}: its export thread, and its counters registered in {@code registry}. */
    public static Tracing start(TracingConfig config, MeterRegistry registry) {
        return live(Optional.of(config), registry);
    }

    /**
     * Tracing as {@code config} says (off when empty) that a reload may change ({@link #prepare}); its
     * counters are registered in {@code registry} once an engine is in force.
     */
    public static Tracing live(Optional<TracingConfig> config, MeterRegistry registry) {
        return live(config, registry, RETIRE_AFTER);
    }

    /** As {@link #live(Optional, MeterRegistry)}, a replaced engine retiring {@code retireAfter} after the reload (tests). */
    static Tracing live(Optional<TracingConfig> config, MeterRegistry registry, Duration retireAfter) {
        Tracing t = new Tracing(Objects.requireNonNull(registry, "registry"), retireAfter);
        config.ifPresent(c -> t.swap(t.startEngine(c)));
        return t;
    }

    private static TracingEngine startEngine(TracingConfig c) {
        EXPORTER_JUL.setLevel(Level.OFF);
        return TracingEngine.start(c);
    }

    // under this
    private void meter() {
        if (metered) {
            return;
        }
        metered = true;
        for (Count c : counts) {
            FunctionCounter.Builder<Tracing> b = FunctionCounter.builder(c.name(), this, t -> t.total(c));
            if (c.reason() != null) {
                b.description(DROPPED).tag("reason", c.reason());
            } else {
                b.description("Spans the collector accepted");
            }
            b.register(registry);
        }
    }

    private synchronized double total(Count c) {
        long n = c.stopped().sum();
        for (TracingEngine e : retiring) {
            n += c.running().applyAsLong(e);
        }
        TracingEngine e = engine;
        return e == null ? n : n + c.running().applyAsLong(e);
    }

    /** A change of {@code tracing:} a reload is about to apply: {@link #commit} it with the rest, or {@link #discard} it. */
    public interface Change {
        void commit();

        void discard();
    }

    private static final Change UNCHANGED = new Change() {
        @Override
        public void commit() {
        }

        @Override
        public void discard() {
        }
    };

    /**
     * Gets {@code next} ready (a new engine started, nothing in force yet, no meter registered) for a
     * reload; nothing to do when it is the section running now.
     *
     * @throws IllegalArgumentException when its exporter cannot be built (the reload is refused, nothing changed)
     */
    public Change prepare(Optional<TracingConfig> next) {
        TracingEngine running = engine;
        TracingConfig now = running == null ? null : running.config;
        if (Objects.equals(now, next.orElse(null))) {
            return UNCHANGED;
        }
        if (registry == null) {
            throw new IllegalArgumentException("tracing: this gateway was built without tracing");
        }
        TracingEngine built;
        try {
            built = next.map(Tracing::startEngine).orElse(null);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("tracing: the exporter could not be built: " + e.getMessage(), e);
        }
        return new Change() {
            @Override
            public void commit() {
                swap(built);
            }

            @Override
            public void discard() {
                if (built != null) {
                    built.close(STOP_WAIT); // it never had a span: its thread ends at once
                }
            }
        };
    }

    private static final Duration STOP_WAIT = Duration.ofSeconds(5);

    // puts next in force (null: off) and retires the engine it replaces; after close, next only stops
    private void swap(TracingEngine next) {
        TracingEngine old = null;
        boolean late;
        synchronized (this) {
            late = closed;
            if (!late) {
                old = engine;
                engine = next;
                if (next != null) {
                    meter();
                }
                if (old != null) {
                    retiring.add(old);
                }
            }
        }
        if (late) { // a reload that finished as the gateway closed: nothing more is exported
            if (next != null) {
                next.close(STOP_WAIT);
            }
            return;
        }
        if (next != null) {
            TracingConfig c = next.config;
            log.info("tracing on endpoint={} protocol={} sample_ratio={} honor_client_sampling={} service_name={}",
                    c.exportUrl(), c.protocol().label(), c.sampleRatio(), c.honorClientSampling(), c.serviceName());
        } else {
            log.info("tracing off");
        }
        if (old != null) {
            TracingEngine retired = old;
            Thread t = new Thread(() -> retire(retired), "sluice-tracing-retire");
            t.setDaemon(true);
            t.start();
        }
    }

    // after the requests that started under it had retireAfter to end, the old engine sends what it holds and stops
    private void retire(TracingEngine old) {
        try {
            Thread.sleep(retireAfter.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        stop(old);
    }

    // one caller at a time for an engine (a retirement and the gateway's close may meet): the second waits
    // for the first's flush; its counts move to the stopped ones' once, and its recorder then only counts
    private void stop(TracingEngine old) {
        old.recorder.redirect(span -> afterRetirement.increment());
        synchronized (old) {
            old.close(STOP_WAIT);
        }
        synchronized (this) {
            if (retiring.remove(old)) {
                for (Count c : counts) {
                    c.stopped().add(c.running().applyAsLong(old));
                }
            }
        }
    }

    /** The engine in force (null: off), for tests. */
    TracingEngine inForce() {
        return engine;
    }

    /** Whether requests arriving now are traced (a sample of them). */
    public boolean on() {
        return engine != null;
    }

    /**
     * The trace of one request that arrived at {@code receivedNanos} with {@code clientHeaders}: a
     * client's {@code traceparent}/{@code tracestate} continued, else a new trace. {@link RequestTrace#NONE}
     * when tracing is off.
     */
    public RequestTrace request(HttpHeaders clientHeaders, RequestTrace.Facts facts, long receivedNanos) {
        TracingEngine e = engine;
        if (e == null) {
            return RequestTrace.NONE;
        }
        Context parent = clientHeaders == null ? Context.root()
                : W3CTraceContextPropagator.getInstance().extract(Context.root(), clientHeaders, HEADERS);
        return RequestTrace.start(e.recorder, e.sampler, parent, facts, receivedNanos);
    }

    /**
     * A request refused before admission (bad HTTP, bad JSON or field, unknown key, route or model,
     * body too large, a timeout while reading it, the connection cap): one server span, started and
     * ended now, with the HTTP status and the error code ({@code error.type}), continuing the
     * client's {@code traceparent} when its headers were read ({@code clientHeaders} null: none,
     * {@code method} null: no request line either). Nothing at all when tracing is off.
     */
    public void refused(HttpHeaders clientHeaders, String method, String path, int status, String code, String message) {
        TracingEngine e = engine;
        if (e == null) {
            return;
        }
        Context parent = clientHeaders == null ? Context.root()
                : W3CTraceContextPropagator.getInstance().extract(Context.root(), clientHeaders, HEADERS);
        RefusalSpan.record(e.recorder, e.sampler, parent, method, path, status, code, message);
    }

    /** Exports what is queued (up to 5 s for each engine, the one in force and any a reload replaced) and stops. */
    @Override
    public void close() {
        List<TracingEngine> all;
        synchronized (this) {
            closed = true;
            if (engine != null) {
                retiring.add(engine);
                engine = null;
            }
            all = List.copyOf(retiring);
        }
        for (TracingEngine r : all) {
            stop(r);
        }
    }

    @Override
    public String toString() {
        TracingEngine e = engine;
        return e == null ? "tracing off" : "tracing to " + e.config.exportUrl();
    }
}
