package dev.sluice.gateway.metrics;

/** What the OpenMetrics scrape keeps of the registry's exemplars. */
final class OpenMetricsText {
    private OpenMetricsText() {
    }

    /**
     * Keeps exemplars on histogram buckets only: the registry also puts one on a timer's {@code _count},
     * which Prometheus (2.42 and others) refuses with the whole scrape ("does not support exemplars").
     */
    static String bucketExemplarsOnly(String text) {
        StringBuilder out = new StringBuilder(text.length());
        int start = 0;
        while (start < text.length()) {
            int end = text.indexOf('\n', start);
            end = end < 0 ? text.length() : end + 1;
            int mark = text.indexOf(" # {", start);
            if (mark >= 0 && mark < end && !text.startsWith("_bucket{", text.indexOf('{', start) - 7)) {
                out.append(text, start, mark).append('\n');
            } else {
                out.append(text, start, end);
            }
            start = end;
        }
        return out.toString();
    }
}
