package dev.sluice.gateway.pd;

import java.util.concurrent.ThreadLocalRandom;

/**
 * Gateway-assigned request ids ({@code rid}). Fixed length, so no id is a prefix of another:
 * SGLang's scheduler matches {@code /abort_request} rids by prefix.
 */
public final class RequestIds {
    private RequestIds() {
    }

    public static String next() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        return String.format("sluice-%016x%08x", r.nextLong(), r.nextInt());
    }
}
