package dev.sluice.gateway.tracing;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.metrics.InstrumentType;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.export.CollectionRegistration;
import io.opentelemetry.sdk.metrics.export.MetricReader;

/**
 * Reads the batch span processor's own count of the spans it dropped because its queue was full
 * (its {@code processedSpans} counter with {@code dropped=true}), read when the gateway's metrics
 * are scraped: the processor counts them, nothing on a request's path does.
 */
final class QueueDrops implements MetricReader {
    private static final AttributeKey<Boolean> DROPPED = AttributeKey.booleanKey("dropped");
    private volatile CollectionRegistration registration = CollectionRegistration.noop();

    @Override
    public void register(CollectionRegistration r) {
        registration = r;
    }

    /** Spans dropped so far because the export queue was full. */
    long dropped() {
        long n = 0;
        for (MetricData m : registration.collectAllMetrics()) {
            if (m.getName().equals("processedSpans")) {
                for (LongPointData p : m.getLongSumData().getPoints()) {
                    if (Boolean.TRUE.equals(p.getAttributes().get(DROPPED))) {
                        n += p.getValue();
                    }
                }
            }
        }
        return n;
    }

    @Override
    public AggregationTemporality getAggregationTemporality(InstrumentType instrumentType) {
        return AggregationTemporality.CUMULATIVE;
    }

    @Override
    public CompletableResultCode forceFlush() {
        return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
        return CompletableResultCode.ofSuccess();
    }
}
