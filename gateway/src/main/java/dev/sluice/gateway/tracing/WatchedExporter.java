package dev.sluice.gateway.tracing;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.Collection;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The OTLP exporter, watched: the spans of a batch the collector did not take are counted, and an
 * unreachable collector is logged once when it goes (with the cause) and once when it is back, not
 * once a batch. Runs on the batch processor's own thread, never on a request's.
 */
final class WatchedExporter implements SpanExporter {
    private static final Logger log = LoggerFactory.getLogger(Tracing.class);
    private final SpanExporter delegate;
    private final String endpoint;
    private final LongAdder failed = new LongAdder();
    private final LongAdder exported = new LongAdder();
    private final AtomicBoolean down = new AtomicBoolean();

    WatchedExporter(SpanExporter delegate, String endpoint) {
        this.delegate = delegate;
        this.endpoint = endpoint;
    }

    @Override
    public CompletableResultCode export(Collection<SpanData> spans) {
        return watch(spans.size(), () -> delegate.export(spans));
    }

    /** Sends {@code n} spans with {@code send} (spans encoded earlier), counted and watched as {@link #export} is. */
    CompletableResultCode watch(int n, Supplier<CompletableResultCode> send) {
        CompletableResultCode result;
        try {
            result = send.get();
        } catch (RuntimeException e) { // an exporter's own bug or a malformed answer: the batch is failed and counted
            result = CompletableResultCode.ofExceptionalFailure(e);
        }
        CompletableResultCode done = result;
        done.whenComplete(() -> {
            if (done.isSuccess()) {
                exported.add(n);
                if (down.compareAndSet(true, false)) {
                    log.info("tracing: the collector takes spans again endpoint={}", endpoint);
                }
            } else {
                failed.add(n);
                if (down.compareAndSet(false, true)) {
                    Throwable cause = done.getFailureThrowable();
                    log.warn("tracing: cannot export spans endpoint={} cause=\"{}\"; spans are dropped and counted in "
                            + "sluice_tracing_spans_dropped_total{reason=\"export_failed\"}, every batch tries again, "
                            + "requests are not slowed", endpoint, cause == null ? "rejected by the collector" : cause.toString());
                }
            }
        });
        return done;
    }

    long failed() {
        return failed.sum();
    }

    long exported() {
        return exported.sum();
    }

    @Override
    public CompletableResultCode flush() {
        return delegate.flush();
    }

    @Override
    public CompletableResultCode shutdown() {
        return delegate.shutdown();
    }
}
