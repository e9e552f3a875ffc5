package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/** What a PD router does by hand, for the tests: the same body with one room to both halves. */
final class SimClient {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final AtomicLong ROOMS = new AtomicLong(1000);
    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    static long nextRoom() {
        return ROOMS.incrementAndGet();
    }

    static ObjectNode json(String text) {
        try {
            return (ObjectNode) JSON.readTree(text);
        } catch (Exception e) {
            throw new IllegalArgumentException(text, e);
        }
    }

    /** Adds rid and bootstrap fields pointing at {@code p}. */
    static ObjectNode pd(String body, PrefillServer p, String rid, long room) {
        ObjectNode o = json(body);
        o.put("rid", rid);
        o.put("bootstrap_host", p.host());
        o.put("bootstrap_port", p.bootstrapPort());
        o.put("bootstrap_room", room);
        return o;
    }

    CompletableFuture<HttpResponse<String>> post(SimWorker w, String path, JsonNode body) {
        return http.sendAsync(HttpRequest.newBuilder(URI.create(w.url() + path)).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** As above with request headers, given as name, value, name, value... */
    CompletableFuture<HttpResponse<String>> post(SimWorker w, String path, JsonNode body, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(w.url() + path)).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString()));
        if (headers.length > 0) {
            b.headers(headers);
        }
        return http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> postNow(SimWorker w, String path, JsonNode body) throws Exception {
        return post(w, path, body).get();
    }

    HttpResponse<String> get(SimWorker w, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(w.url() + path)).timeout(Duration.ofSeconds(30)).GET()
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    static List<String> dataEvents(String sse) {
        return sse.lines().filter(l -> l.startsWith("data:")).map(l -> l.substring(5).trim()).toList();
    }

    /** Polls until the condition holds or the timeout passes: the tests' only way to wait. */
    static boolean eventually(Duration timeout, BooleanSupplier condition) throws InterruptedException {
        return dev.sluice.testbed.testing.Poll.eventually(timeout, condition);
    }

    /** Reads loop-confined state of a server on its event loop. */
    static <T> T onLoop(SimWorker w, Callable<T> task) throws Exception {
        return w.loop.submit(task).get(5, TimeUnit.SECONDS);
    }

    /** {@link #onLoop} inside a polled condition. */
    static boolean onLoopTrue(SimWorker w, Callable<Boolean> task) {
        try {
            return onLoop(w, task);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
