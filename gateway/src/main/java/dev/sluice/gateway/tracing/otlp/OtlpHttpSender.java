package dev.sluice.gateway.tracing.otlp;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Objects;

/**
 * OTLP/HTTP with protobuf ({@code POST /v1/traces}, {@code application/x-protobuf}): each batch
 * encoded by a {@link TraceRequestEncoder} into its reused buffer and posted on the calling thread
 * (the export thread, never a request's): to a plain-http collector over one kept-alive socket
 * ({@link PlainHttpPost}), to an https one with the JDK's HTTP client (TLS, HTTP/2). One
 * attempt a batch: a failure (unreachable, timed out, a status other than 2xx) fails that batch,
 * and the next batch tries again. Each export waits for its answer, so one buffer serves every
 * batch.
 */
public final class OtlpHttpSender implements SpanExporter {
    private final HttpClient client; // https only
    private final PlainHttpPost plain; // http only
    private final URI uri;
    private final Duration timeout;
    private final String[] headers;
    private final TraceRequestEncoder encoder = new TraceRequestEncoder();
    private volatile boolean shutdown;

    /**
     * To {@code url} with {@code headers} (a collector's credentials), each batch given at most
     * {@code timeout}. A header the JDK client does not let a caller set (Host, Content-Length...)
     * is refused here with an {@link IllegalArgumentException} naming it.
     */
    public OtlpHttpSender(String url, Map<String, String> headers, Duration timeout) {
        this.uri = URI.create(Objects.requireNonNull(url, "url"));
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        this.headers = new String[headers.size() * 2 + 2];
        int i = 0;
        this.headers[i++] = "Content-Type";
        this.headers[i++] = "application/x-protobuf";
        for (Map.Entry<String, String> h : headers.entrySet()) {
            this.headers[i++] = h.getKey();
            this.headers[i++] = h.getValue();
        }
        headers.forEach(OtlpHttpSender::checkHeader);
        try {
            HttpRequest.newBuilder(uri).headers(this.headers); // the JDK refuses its restricted headers here
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("tracing: a collector header cannot be sent: " + e.getMessage(), e);
        }
        if ("http".equalsIgnoreCase(uri.getScheme())) {
            this.plain = new PlainHttpPost(uri, headers, timeout);
            this.client = null;
        } else {
            this.plain = null;
            this.client = HttpClient.newBuilder().connectTimeout(timeout).build();
        }
    }

    @Override
    public synchronized CompletableResultCode export(Collection<SpanData> spans) {
        if (shutdown) {
            return CompletableResultCode.ofFailure();
        }
        encoder.encode(spans);
        return post(encoder.array(), encoder.size(), encoder::renew);
    }

    /**
     * Posts one encoded request, {@code body[0, length)}, and waits for the collector's answer.
     * {@code abandoned} runs when a send was given up while it may still read {@code body} (https,
     * timed out or interrupted; not on a refused or reset connection, so a collector that is down
     * does not cost a new buffer a batch): the caller then writes its next request into a fresh buffer.
     */
    public synchronized CompletableResultCode post(byte[] body, int length, Runnable abandoned) {
        if (shutdown) {
            return CompletableResultCode.ofFailure();
        }
        if (plain != null) {
            try {
                return answer(plain.post(body, length));
            } catch (IOException | RuntimeException e) { // a malformed answer too: the batch is failed and counted
                return CompletableResultCode.ofExceptionalFailure(e);
            }
        }
        HttpRequest request = HttpRequest.newBuilder(uri).timeout(timeout).headers(headers)
                .POST(HttpRequest.BodyPublishers.ofByteArray(body, 0, length)).build();
        try {
            HttpResponse<Void> response = client.send(request, HttpResponse.BodyHandlers.discarding());
            return answer(response.statusCode());
        } catch (HttpTimeoutException e) { // the exchange may still be reading the body: the caller lets it go
            abandoned.run();
            return CompletableResultCode.ofExceptionalFailure(e);
        } catch (IOException | RuntimeException e) { // refused, reset: the body is no longer read, and is kept
            return CompletableResultCode.ofExceptionalFailure(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            abandoned.run();
            return CompletableResultCode.ofExceptionalFailure(e);
        }
    }

    private static CompletableResultCode answer(int status) {
        return status / 100 == 2 ? CompletableResultCode.ofSuccess()
                : CompletableResultCode.ofExceptionalFailure(new IOException("the collector answered " + status));
    }

    // a header's name is an HTTP token and its value one line: nothing a secret's bytes could add to the request
    private static void checkHeader(String name, String value) {
        if (name.isEmpty() || !name.chars().allMatch(c -> c > 32 && c < 127 && "()<>@,;:\\\"/[]?={}".indexOf(c) < 0)) {
            throw new IllegalArgumentException("tracing: a collector header's name is not an HTTP token: \"" + name + "\"");
        }
        if (value.chars().anyMatch(c -> c == '\r' || c == '\n' || c == 0)) {
            throw new IllegalArgumentException("tracing: the collector header " + name + " has a line break in its value");
        }
    }

    @Override
    public CompletableResultCode flush() {
        return CompletableResultCode.ofSuccess(); // nothing is held between exports
    }

    @Override
    public CompletableResultCode shutdown() {
        shutdown = true;
        if (plain != null) {
            plain.close(); // unblocks an export stuck writing to a collector that stopped reading
        }
        synchronized (this) { // after the export in progress
            if (plain != null) {
                plain.close();
            }
        }
        return CompletableResultCode.ofSuccess();
    }
}
