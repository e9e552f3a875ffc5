package dev.sluice.gateway.testing;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * One streamed request that asked for queue updates ({@code X-Sluice-Queue-Updates: 1}), read line by
 * line as the bytes arrive, each line stamped with when it came: what its client saw of its wait
 * (the {@code : queue position=N eta_ms=M} comments and the {@code : queue wait_ms=N} one) and of
 * its answer.
 */
public final class QueueUpdateStream {
    private static final Pattern POSITION = Pattern.compile("^: queue position=(\\d+) eta_ms=(\\d+)$");
    private static final Pattern WAITED = Pattern.compile("^: queue wait_ms=(\\d+)$");

    /** A line and the {@code System.nanoTime()} it was read at. */
    public record Line(long atNanos, String text) {
    }

    /** One {@code : queue position} comment: when it came, the position and the estimate. */
    public record Position(long atNanos, int position, long etaMillis) {
    }

    public final long sentNanos;
    public volatile long headersNanos;
    public volatile int status;
    public volatile HttpResponse<?> response;
    private final List<Line> lines = new ArrayList<>();
    public final CompletableFuture<Void> done;

    private QueueUpdateStream(HttpClient http, URI uri, String json, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").header("X-Sluice-Queue-Updates", "1")
                .POST(HttpRequest.BodyPublishers.ofString(json));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        sentNanos = System.nanoTime();
        done = http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofLines()).thenAcceptAsync(r -> {
            headersNanos = System.nanoTime();
            status = r.statusCode();
            response = r;
            try (Stream<String> body = r.body()) {
                body.forEach(l -> {
                    synchronized (lines) {
                        lines.add(new Line(System.nanoTime(), l));
                    }
                });
            }
        });
    }

    /** Sends a streamed request with {@code X-Sluice-Queue-Updates: 1} (and {@code headers}, name then value). */
    public static QueueUpdateStream send(HttpClient http, URI uri, String json, String... headers) {
        return new QueueUpdateStream(http, uri, json, headers);
    }

    public List<Line> lines() {
        synchronized (lines) {
            return List.copyOf(lines);
        }
    }

    /** Every non-empty line, in order, without the stamps. */
    public List<String> texts() {
        return lines().stream().map(Line::text).filter(t -> !t.isEmpty()).toList();
    }

    public List<Position> positions() {
        List<Position> out = new ArrayList<>();
        for (Line l : lines()) {
            Matcher m = POSITION.matcher(l.text());
            if (m.matches()) {
                out.add(new Position(l.atNanos(), Integer.parseInt(m.group(1)), Long.parseLong(m.group(2))));
            }
        }
        return out;
    }

    /** The {@code : queue wait_ms=} value (the first, for a retried request), if it came. */
    public OptionalLong waitedMillis() {
        for (Line l : lines()) {
            Matcher m = WAITED.matcher(l.text());
            if (m.matches()) {
                return OptionalLong.of(Long.parseLong(m.group(1)));
            }
        }
        return OptionalLong.empty();
    }

    /** When the {@code : queue wait_ms=} comment came (the dispatch, as the client saw it), or -1. */
    public long waitedAtNanos() {
        for (Line l : lines()) {
            if (WAITED.matcher(l.text()).matches()) {
                return l.atNanos();
            }
        }
        return -1;
    }

    /** The {@code data:} lines, in order. */
    public List<String> data() {
        return texts().stream().filter(t -> t.startsWith("data:")).toList();
    }

    /**
     * How far the first estimate was from the wait it predicted: |first eta - actual wait| / actual
     * wait, where both count from when that estimate came (NaN without a first estimate or a wait).
     */
    public double firstEstimateError() {
        List<Position> p = positions();
        long waitedAt = waitedAtNanos();
        if (p.isEmpty() || waitedAt < 0) {
            return Double.NaN;
        }
        double actual = (waitedAt - p.get(0).atNanos()) / 1e6;
        return actual <= 0 ? Double.NaN : Math.abs(p.get(0).etaMillis() - actual) / actual;
    }
}
