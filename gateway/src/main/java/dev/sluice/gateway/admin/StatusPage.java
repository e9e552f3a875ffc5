package dev.sluice.gateway.admin;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.Optional;

/**
 * The operator's live status page on the admin listener ({@code GET /}), in the spirit of HAProxy's
 * stats page: one HTML page, its stylesheet, its script and its icon, read from the jar once at start and
 * served from memory. The script polls {@code GET /admin/state} (served on the admin loop like any
 * other admin request, never on the control loop that runs admission's timers) and fetches nothing
 * from anywhere else, which the {@link #CONTENT_SECURITY_POLICY} enforces in the browser.
 */
final class StatusPage {
    /** Everything from this listener only; no inline script or style, no framing, no plugins, no form posts. */
    static final String CONTENT_SECURITY_POLICY = "default-src 'self'; base-uri 'none'; form-action 'none'; "
            + "frame-ancestors 'none'; object-src 'none'";

    /** One file of the page, ready to send. */
    record Asset(String contentType, byte[] body) {
    }

    private static final String DIR = "/dev/sluice/gateway/admin/status/";

    private final Map<String, Asset> byPath;

    private StatusPage(Map<String, Asset> byPath) {
        this.byPath = byPath;
    }

    /** Reads the page's files from the classpath (at start, off every event loop); fails if one is missing. */
    static StatusPage load() {
        return new StatusPage(Map.of(
                "/", new Asset("text/html; charset=utf-8", read("index.html")),
                "/status.css", new Asset("text/css; charset=utf-8", read("status.css")),
                "/status.js", new Asset("text/javascript; charset=utf-8", read("status.js")),
                "/favicon.svg", new Asset("image/svg+xml", read("favicon.svg"))));
    }

    /** The file served at {@code path} (the request's path without its query), if the page has one there. */
    Optional<Asset> at(String path) {
        return Optional.ofNullable(byPath.get(path));
    }

    private static byte[] read(String name) {
        try (InputStream in = StatusPage.class.getResourceAsStream(DIR + name)) {
            if (in == null) {
                throw new IllegalStateException("the admin status page's " + DIR + name + " is not in the jar");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
