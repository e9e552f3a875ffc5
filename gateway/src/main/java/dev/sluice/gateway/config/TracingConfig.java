package dev.sluice.gateway.config;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * OpenTelemetry tracing (docs/observability.md): where spans go and which requests are sampled.
 * Present only when the file has a {@code tracing:} section; the standard {@code OTEL_*}
 * variables fill what the section leaves unset (read once, with the file).
 *
 * @param endpoint            the collector's OTLP URL (for http/protobuf the /v1/traces path is added
 *                            when the URL has no path)
 * @param headers             the collector's request headers (credentials), from the variable
 *                            {@code headers_env} names, or OTEL_EXPORTER_OTLP_[TRACES_]HEADERS; never the file
 * @param timeout             the longest one export may take (a slower collector loses that batch)
 * @param sampleRatio         the share of traces recorded and exported, 0..1, by trace id
 * @param honorClientSampling a client's sampled flag decides (else the client's trace id is still
 *                            continued but the gateway's ratio decides: a client cannot force 100 %)
 */
public record TracingConfig(String endpoint, Protocol protocol, Map<String, Secret> headers, Duration timeout,
                            double sampleRatio, String serviceName, boolean honorClientSampling) {

    /** OTLP's transports, as OTEL_EXPORTER_OTLP_PROTOCOL names them. */
    public enum Protocol {
        GRPC("grpc"), HTTP_PROTOBUF("http/protobuf");

        private final String label;

        Protocol(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    public TracingConfig {
        Objects.requireNonNull(endpoint, "endpoint");
        Objects.requireNonNull(protocol, "protocol");
        headers = Map.copyOf(headers);
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(serviceName, "serviceName");
        if (!(sampleRatio >= 0 && sampleRatio <= 1)) {
            throw new IllegalArgumentException("tracing.sample_ratio: " + sampleRatio + " (expected: between 0 and 1)");
        }
    }

    /** The URL spans are sent to: the endpoint, with /v1/traces added for http/protobuf when it has no path. */
    public String exportUrl() {
        if (protocol != Protocol.HTTP_PROTOBUF) {
            return endpoint;
        }
        String path = java.net.URI.create(endpoint).getRawPath();
        return path == null || path.isEmpty() || path.equals("/")
                ? endpoint.replaceAll("/+$", "") + "/v1/traces" : endpoint;
    }
}
