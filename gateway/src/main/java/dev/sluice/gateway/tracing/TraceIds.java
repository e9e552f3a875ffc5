package dev.sluice.gateway.tracing;

import java.util.concurrent.ThreadLocalRandom;

/**
 * W3C trace and span ids as numbers (a trace id as two longs, a span id as one) and their
 * lowercase hex, the form traceparent, logs and exemplars use. Random ids come from {@link
 * ThreadLocalRandom}, as the OpenTelemetry SDK's default generator makes them; zero is never an id.
 */
final class TraceIds {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private TraceIds() {
    }

    static long randomNonZero() {
        long id;
        do {
            id = ThreadLocalRandom.current().nextLong();
        } while (id == 0);
        return id;
    }

    static String hex(long id) {
        char[] c = new char[16];
        fill(c, 0, id);
        return new String(c);
    }

    static String hex(long high, long low) {
        char[] c = new char[32];
        fill(c, 0, high);
        fill(c, 16, low);
        return new String(c);
    }

    private static void fill(char[] c, int at, long v) {
        for (int i = 15; i >= 0; i--) {
            c[at + i] = HEX[(int) (v & 0xF)];
            v >>>= 4;
        }
    }

    /** A tracestate header's value: the entries as {@code key=value}, comma-separated, in the state's order. */
    static String traceState(io.opentelemetry.api.trace.TraceState state) {
        StringBuilder b = new StringBuilder();
        state.forEach((k, v) -> b.append(b.length() == 0 ? "" : ",").append(k).append('=').append(v));
        return b.toString();
    }

    /** The long of 16 hex characters of {@code hex} from {@code at} (an id already checked valid by the propagator). */
    static long parse(String hex, int at) {
        long v = 0;
        for (int i = at; i < at + 16; i++) {
            char ch = hex.charAt(i);
            v = (v << 4) | (ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10);
        }
        return v;
    }
}
