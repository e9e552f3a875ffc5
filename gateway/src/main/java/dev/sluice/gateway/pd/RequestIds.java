package dev.sluice.gateway.pd;

import java.util.concurrent.ThreadLocalRandom;

/**
 * Gateway-assigned request ids ({@code rid}): {@code sluice-} and 24 lowercase hex digits (96
 * random bits). Fixed length, so no id is a prefix of another: SGLang's scheduler matches
 * {@code /abort_request} rids by prefix. Built by hand: {@code String.format} cost more than the
 * rest of a request's bookkeeping.
 */
public final class RequestIds {
    private static final byte[] HEX = "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final byte[] PREFIX = "sluice-".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    static final int LENGTH = PREFIX.length + 24;
    /**
     * The gateway's own stall probes: {@code sluice-probe-} and 24 hex digits. No client rid is a
     * prefix of one ('p' is no hex digit), and all have one length, so none is a prefix of another.
     */
    public static final String PROBE_PREFIX = "sluice-probe-";
    /** The rids of the prefill rates' calibration requests: no client rid is a prefix of one ('l' is no hex digit). */
    public static final String CALIBRATION_PREFIX = "sluice-calib-";

    private RequestIds() {
    }

    public static String next() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        byte[] out = new byte[LENGTH];
        System.arraycopy(PREFIX, 0, out, 0, PREFIX.length);
        hex(r.nextLong(), 16, out, PREFIX.length);
        hex(r.nextInt() & 0xffffffffL, 8, out, PREFIX.length + 16);
        return new String(out, java.nio.charset.StandardCharsets.US_ASCII);
    }

    /** A fresh id for one stall probe ({@link #PROBE_PREFIX}). */
    public static String probe() {
        return PROBE_PREFIX + next().substring(PREFIX.length);
    }

    /** A fresh id for one calibration request ({@link #CALIBRATION_PREFIX}). */
    public static String calibration() {
        return CALIBRATION_PREFIX + next().substring(PREFIX.length);
    }

    private static void hex(long v, int digits, byte[] out, int at) {
        for (int i = digits - 1; i >= 0; i--) {
            out[at + i] = HEX[(int) (v & 0xf)];
            v >>>= 4;
        }
    }
}
