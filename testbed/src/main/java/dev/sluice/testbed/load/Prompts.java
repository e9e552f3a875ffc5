package dev.sluice.testbed.load;

import java.util.SplittableRandom;

/**
 * Prompt text of about {@code tokens} tokens at ~4 UTF-8 bytes per token (the ratio the
 * simulator and Sluice's estimator assume), jittered by up to ±10%, and distinct per request (a
 * numbered header and seeded random words) so no prefix cache could serve one from another;
 * {@link #text} is the same generator for texts that other code composes ({@link ChatSessions}).
 */
final class Prompts {
    static final int BYTES_PER_TOKEN = 4;
    private static final String LETTERS = "etaoinshrdlucmfwypvbgkqjxz";

    private Prompts() {
    }

    /** The prompt of request {@code index}: a function of (seed, index, tokens) only. */
    static String of(long seed, int index, int tokens) {
        // SplittableRandom mixes its seed: java.util.Random's first outputs for neighbouring seeds are alike
        return text(new SplittableRandom(seed * 0x9E3779B97F4A7C15L + index), "Request " + index + ". ", tokens);
    }

    /** {@code header}, then random words from {@code random}: about {@code tokens} tokens, ±10%. */
    static String text(SplittableRandom random, String header, int tokens) {
        double jitter = 1 + (random.nextDouble() * 0.2 - 0.1);
        int bytes = Math.max(8, (int) Math.round(tokens * BYTES_PER_TOKEN * jitter));
        StringBuilder b = new StringBuilder(bytes + 16);
        b.append(header);
        while (b.length() < bytes) {
            int word = 2 + random.nextInt(7);
            for (int i = 0; i < word; i++) {
                b.append(LETTERS.charAt(random.nextInt(LETTERS.length())));
            }
            b.append(' ');
        }
        b.setLength(bytes);
        return b.toString();
    }
}
