package dev.sluice.gateway.tracing;

import io.netty.util.AsciiString;
import java.util.concurrent.ThreadLocalRandom;

/**
 * W3C trace and span ids as numbers (a trace id as two longs, a span id as one) and their
 * lowercase hex, the form traceparent, logs and exemplars use. Random ids come from {@link
 * ThreadLocalRandom}, as the OpenTelemetry SDK's default generator makes them; zero is never an id.
 */
final class TraceIds {
    private static final char[] HEX = "0123456789abcdef".toCharArray();
    private static final byte[] HEX_BYTES = "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    /** The length of a version-00 traceparent: 00-{32 hex}-{16 hex}-{2 hex}. */
    static final int TRACEPARENT_LENGTH = 55;
    // header names as AsciiString: Netty hashes and compares them without converting a String each call
    static final AsciiString TRACEPARENT = AsciiString.cached("traceparent");
    static final AsciiString TRACESTATE = AsciiString.cached("tracestate");

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

    /**
     * A W3C traceparent header value, version 00, as the SDK's propagator writes it: the trace, the
     * parent span, the flags ({@code 01} sampled, {@code 00} not). Written as ASCII bytes straight
     * from the numbers into the header value's own array (an AsciiString over it, not copied): no
     * hex String a call, no concatenation, and Netty writes the bytes as they are.
     */
    static AsciiString traceparent(long traceHigh, long traceLow, long parentSpan, boolean sampled) {
        byte[] b = new byte[TRACEPARENT_LENGTH];
        b[0] = '0';
        b[1] = '0';
        b[2] = '-';
        fill(b, 3, traceHigh);
        fill(b, 19, traceLow);
        b[35] = '-';
        fill(b, 36, parentSpan);
        b[52] = '-';
        b[53] = '0';
        b[54] = sampled ? (byte) '1' : (byte) '0';
        return new AsciiString(b, false);
    }

    private static void fill(byte[] b, int at, long v) {
        for (int i = 15; i >= 0; i--) {
            b[at + i] = HEX_BYTES[(int) (v & 0xF)];
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
