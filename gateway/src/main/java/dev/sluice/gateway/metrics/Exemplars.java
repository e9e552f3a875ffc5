package dev.sluice.gateway.metrics;

import io.prometheus.client.exemplars.tracer.common.SpanContextSupplier;

/**
 * The trace whose latencies this thread is recording: while a sampled request's first token or end
 * is being counted, its trace and span ids are set here, and the latency histograms attach them to
 * the bucket they fall in as an exemplar (served in the OpenMetrics format), so a slow bucket on a
 * dashboard opens the trace of a request that was in it. One holder per thread, nothing allocated
 * per request; unset, no exemplar.
 */
public final class Exemplars implements SpanContextSupplier {
    private static final ThreadLocal<Ids[]> CURRENT = ThreadLocal.withInitial(() -> new Ids[1]);

    /** A trace's ids, written out as hex only when an exemplar is taken (rarely: once per bucket every few seconds). */
    public interface Ids {
        String traceId();

        String spanId();
    }

    private record Given(String traceId, String spanId) implements Ids {
    }

    /** The ids the histograms recorded on this thread carry until {@link #clear}. */
    public static void set(Ids ids) {
        CURRENT.get()[0] = ids;
    }

    /** The same for ids already written out. */
    public static void set(String traceId, String spanId) {
        set(traceId == null ? null : new Given(traceId, spanId));
    }

    public static void clear() {
        set(null);
    }

    @Override
    public String getTraceId() {
        Ids ids = CURRENT.get()[0];
        return ids == null ? null : ids.traceId();
    }

    @Override
    public String getSpanId() {
        Ids ids = CURRENT.get()[0];
        return ids == null ? null : ids.spanId();
    }

    @Override
    public boolean isSampled() {
        return CURRENT.get()[0] != null;
    }
}
