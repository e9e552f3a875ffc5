package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.server.GatewayServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The admin status page as HTTP (its behaviour in a browser: {@link AdminStatusPageBrowserTest}): its
 * files with their types and a Content-Security-Policy of this listener only, nothing on them from
 * elsewhere, read-only (no method but GET), and answered without the admin token that guards
 * {@code POST /admin/reload}, which it never shows.
 */
class AdminStatusPageEndToEndTest {
    private static final String TOKEN = "adm-page-7c41e9-token";
    private static final String CSP = "default-src 'self'; base-uri 'none'; form-action 'none'; "
            + "frame-ancestors 'none'; object-src 'none'";

    @TempDir
    Path dir;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private GatewayServer gateway;

    @BeforeEach
    void start() throws Exception {
        Path token = Files.writeString(dir.resolve("admin-token"), TOKEN + "\n");
        // workers where nothing listens: the admin listener is what is tested
        gateway = new GatewayServer(ConfigLoader.parse("""
                listen: { host: 127.0.0.1, port: 0 }
                workers:
                  prefill: [ { url: "http://127.0.0.1:1", bootstrap_port: 8998 } ]
                  decode: [ { url: "http://127.0.0.1:2" } ]
                admin: { port: 0, token_file: "%s" }
                """.formatted(token), "test")).start();
    }

    @AfterEach
    void stop() {
        if (gateway != null) {
            gateway.close();
        }
    }

    private HttpResponse<String> send(String method, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.adminPort() + path))
                .timeout(Duration.ofSeconds(5)).method(method, HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void thePageAndItsFilesAreServedWithTheirTypesAndAPolicyOfThisListenerOnly() throws Exception {
        Map<String, String> types = Map.of("/", "text/html; charset=utf-8", "/?refresh=1", "text/html; charset=utf-8",
                "/status.css", "text/css; charset=utf-8", "/status.js", "text/javascript; charset=utf-8",
                "/favicon.svg", "image/svg+xml");
        for (var e : types.entrySet()) {
            HttpResponse<String> res = send("GET", e.getKey());
            assertThat(res.statusCode()).as(e.getKey()).isEqualTo(200);
            assertThat(res.headers().firstValue("Content-Type")).as(e.getKey()).hasValue(e.getValue());
            assertThat(res.headers().firstValue("Content-Security-Policy")).as(e.getKey()).hasValue(CSP);
            assertThat(res.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
            assertThat(res.body()).isNotBlank();
        }
        String html = send("GET", "/").body();
        assertThat(html).contains("<script src=\"/status.js\"").contains("href=\"/status.css\"")
                .doesNotContain("<style").doesNotContain("style=").doesNotContain("<script>");
        // nothing loaded from anywhere else: no absolute URL in the page, its script or its stylesheet
        for (String path : List.of("/", "/status.css", "/status.js")) {
            assertThat(send("GET", path).body()).as(path).doesNotContainPattern("(?i)(https?:)?//[a-z0-9.-]+\\.[a-z]")
                    .doesNotContain("@import");
        }
        assertThat(send("GET", "/status.js").body()).contains("fetch('/admin/state'")
                .doesNotContain("innerHTML").doesNotContain("eval(");
    }

    @Test
    void itIsReadOnlyAndNeedsNoTokenWhichItNeverShows() throws Exception {
        for (String path : List.of("/", "/status.js", "/admin/state", "/metrics")) {
            HttpResponse<String> res = send("GET", path);
            assertThat(res.statusCode()).as("GET %s without the admin token", path).isEqualTo(200);
            assertThat(res.body()).doesNotContain(TOKEN);
        }
        for (String method : List.of("POST", "PUT", "DELETE", "PATCH")) {
            assertThat(send(method, "/").statusCode()).as(method + " /").isEqualTo(405);
            assertThat(send(method, "/status.js").statusCode()).as(method + " /status.js").isEqualTo(405);
        }
        assertThat(send("POST", "/admin/reload").statusCode()).as("the one mutating route still needs the token")
                .isEqualTo(401);
        assertThat(send("GET", "/index.html").statusCode()).isEqualTo(404);
    }
}
