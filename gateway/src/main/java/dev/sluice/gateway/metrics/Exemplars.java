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
    private static final ThreadLocal<String[]> CURRENT = ThreadLocal.withInitial(() -> new String[2]);

    /** The ids the histograms recorded on this thread carry until {@link #clear}. */
    public static void set(String traceId, String spanId) {
        String[] c = CURRENT.get();
        c[0] = traceId;
        c[1] = spanId;
    }

    public static void clear() {
        set(null, null);
    }

    @Override
    public String getTraceId() {
        return CURRENT.get()[0];
    }

    @Override
    public String getSpanId() {
        return CURRENT.get()[1];
    }

    @Override
    public boolean isSampled() {
        return CURRENT.get()[0] != null;
    }
}
