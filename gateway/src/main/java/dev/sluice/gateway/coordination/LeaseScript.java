package dev.sluice.gateway.coordination;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** {@code lease.lua}, the one script a renewal runs (EVALSHA, EVAL when the server does not have it yet). */
final class LeaseScript {
    private static final String TEXT = load();

    private LeaseScript() {
    }

    static String text() {
        return TEXT;
    }

    static String sha1() {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(TEXT.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String load() {
        try (InputStream in = LeaseScript.class.getResourceAsStream("lease.lua")) {
            if (in == null) {
                throw new IllegalStateException("lease.lua missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
