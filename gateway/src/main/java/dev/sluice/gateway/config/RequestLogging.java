package dev.sluice.gateway.config;

import java.util.Locale;

/**
 * Which requests get a line in the log ({@code logging.requests}). One INFO line per request is the
 * default, as nginx's and Envoy's access logs; on a busy gateway the line is the largest single cost
 * above the sockets (about 1.5 us of CPU in user space and 1.3 us in the kernel per request, measured
 * in docs/benchmarks.md), so an operator who has the metrics and the trace of failures may keep only
 * the failures, or none ("none", not "off": YAML 1.1 reads a bare off as false). Whatever is chosen,
 * sluice_requests_total counts every request.
 */
public enum RequestLogging {
    /** Every request, one line at INFO. */
    ALL,
    /** Only requests that did not end {@code ok}: rejected, invalid, failed, timed out, abandoned. */
    FAILURES,
    /** No request lines (retries, aborts and worker state changes are still logged). */
    NONE;

    private final String label = name().toLowerCase(Locale.ROOT);

    public String label() {
        return label;
    }

    /** Whether a request that ended {@code ok} or not gets its line. */
    public boolean logs(boolean ok) {
        return this == ALL || (this == FAILURES && !ok);
    }
}
