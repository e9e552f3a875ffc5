package dev.sluice.gateway.tracing.otlp;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Objects;

/**
 * OTLP/HTTP with protobuf ({@code POST /v1/traces}, {@code application/x-protobuf}): each batch
 * encoded by a {@link TraceRequestEncoder} into its reused buffer and posted with the JDK's HTTP
 * client, on the calling thread (the batch processor's export thread, never a request's). One
 * attempt a batch: a failure (unreachable, timed out, a status other than 2xx) fails that batch,
 * and the next batch tries again. Each export waits for its answer, so one buffer serves every
 * batch.
 */
public final class OtlpHttpSender implements SpanExporter {
    private final HttpClient client;
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
        try {
            HttpRequest.newBuilder(uri).headers(this.headers); // the JDK refuses its restricted headers here
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("tracing: a collector header cannot be sent: " + e.getMessage(), e);
        }
        // plain http: HTTP/1.1 with keep-alive, as collectors serve it (no h2c upgrade); https negotiates
        this.client = HttpClient.newBuilder().connectTimeout(timeout)
                .version("http".equalsIgnoreCase(uri.getScheme()) ? HttpClient.Version.HTTP_1_1 : HttpClient.Version.HTTP_2)
                .build();
    }

    @Override
    public synchronized CompletableResultCode export(Collection<SpanData> spans) {
        if (shutdown) {
            return CompletableResultCode.ofFailure();
        }
        encoder.encode(spans);
        HttpRequest request = HttpRequest.newBuilder(uri).timeout(timeout).headers(headers)
                .POST(HttpRequest.BodyPublishers.ofByteArray(encoder.array(), 0, encoder.size())).build();
        try {
            HttpResponse<Void> response = client.send(request, HttpResponse.BodyHandlers.discarding());
            int status = response.statusCode();
            return status / 100 == 2 ? CompletableResultCode.ofSuccess()
                    : CompletableResultCode.ofExceptionalFailure(new IOException("the collector answered " + status));
        } catch (IOException e) {
            encoder.renew(); // a request given up on may still be reading the old buffer
            return CompletableResultCode.ofExceptionalFailure(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            encoder.renew();
            return CompletableResultCode.ofExceptionalFailure(e);
        }
    }

    @Override
    public CompletableResultCode flush() {
        return CompletableResultCode.ofSuccess(); // nothing is held between exports
    }

    @Override
    public CompletableResultCode shutdown() {
        shutdown = true;
        return CompletableResultCode.ofSuccess();
    }
}
