package dev.sluice.testbed.load;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.HdrHistogram.Histogram;

/**
 * Mean and percentiles of one latency, in milliseconds, from an HdrHistogram of microseconds
 * (three significant digits: a reported percentile is within 0.1% of the exact one).
 */
final class Summary {
    private static final long MAX_MICROS = 24L * 3600 * 1_000_000;
    private final Histogram histogram = new Histogram(MAX_MICROS, 3);

    void addNanos(long nanos) {
        histogram.recordValue(Math.min(MAX_MICROS, Math.max(0, nanos / 1_000)));
    }

    long count() {
        return histogram.getTotalCount();
    }

    /** Milliseconds at percentile p (0..100); NaN when empty. */
    double percentileMs(double p) {
        return count() == 0 ? Double.NaN : histogram.getValueAtPercentile(p) / 1_000.0;
    }

    double meanMs() {
        return count() == 0 ? Double.NaN : histogram.getMean() / 1_000.0;
    }

    double maxMs() {
        return count() == 0 ? Double.NaN : histogram.getMaxValue() / 1_000.0;
    }

    /** {@code {"count", "mean", "p50", "p90", "p99", "max"}}, nulls when empty. */
    ObjectNode toJson() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("count", count());
        put(o, "mean", meanMs());
        put(o, "p50", percentileMs(50));
        put(o, "p90", percentileMs(90));
        put(o, "p99", percentileMs(99));
        put(o, "max", maxMs());
        return o;
    }

    static void put(ObjectNode o, String key, double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            o.putNull(key);
        } else {
            o.put(key, Math.round(v * 1000) / 1000.0);
        }
    }
}
