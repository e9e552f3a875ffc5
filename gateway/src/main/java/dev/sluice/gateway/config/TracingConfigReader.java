package dev.sluice.gateway.config;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Reads the {@code tracing:} section (docs/observability.md):
 *
 * <pre>
 * tracing:
 *   otlp:
 *     endpoint: http://collector:4317     # else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT
 *     protocol: grpc                      # grpc | http/protobuf; else OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL
 *     headers_env: SLUICE_OTLP_HEADERS    # a variable holding k=v,k2=v2; else OTEL_EXPORTER_OTLP_[TRACES_]HEADERS
 *     timeout: 1s                         # else OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT (milliseconds)
 *   sample_ratio: 1.0                     # else OTEL_TRACES_SAMPLER_ARG
 *   service_name: sluice-gateway          # else OTEL_SERVICE_NAME
 *   honor_client_sampling: false
 * </pre>
 *
 * Absent: tracing is off (the {@code OTEL_*} variables alone do not turn it on).
 */
final class TracingConfigReader {
    private static final String HTTP_ENV = "OTEL_EXPORTER_OTLP_";
    private static final String TRACES_ENV = "OTEL_EXPORTER_OTLP_TRACES_";

    private TracingConfigReader() {
    }

    static Optional<TracingConfig> read(ConfigNode n) {
        n.allowOnly("otlp", "sample_ratio", "service_name", "honor_client_sampling");
        ConfigNode otlp = n.child("otlp", "The OpenTelemetry collector spans are exported to (OTLP).");
        otlp.allowOnly("endpoint", "protocol", "headers_env", "timeout");
        if (n.isMissing() && !n.reading().explore()) {
            return Optional.empty();
        }
        ConfigReading env = n.reading();
        ConfigNode endpointNode = otlp.child("endpoint", "The collector's OTLP URL: http(s)://host:4317 for grpc, "
                + "http(s)://host:4318 for http/protobuf (/v1/traces is added when the URL has no path). Unset: "
                + "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces), else "
                + "http://localhost:4317.");
        String endpoint = endpointNode.optionalText().orElse(null);
        boolean baseOnly = false;
        if (endpoint == null) {
            endpoint = env.env(TRACES_ENV + "ENDPOINT");
        }
        if (endpoint == null) {
            endpoint = env.env(HTTP_ENV + "ENDPOINT");
            baseOnly = endpoint != null;
        }
        ConfigNode protocolNode = otlp.child("protocol", "grpc or http/protobuf. Unset: "
                + "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else grpc.");
        TracingConfig.Protocol protocol = protocolNode.oneOf(TracingConfig.Protocol.GRPC,
                List.of(TracingConfig.Protocol.values()), TracingConfig.Protocol::label);
        if (protocolNode.isMissing()) {
            String p = Optional.ofNullable(env.env(TRACES_ENV + "PROTOCOL")).orElse(env.env(HTTP_ENV + "PROTOCOL"));
            if (p != null) {
                protocol = List.of(TracingConfig.Protocol.values()).stream().filter(v -> v.label().equals(p))
                        .findFirst().orElse(null);
                if (protocol == null) {
                    protocolNode.reject(p + " (from OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL)", "grpc or http/protobuf");
                    protocol = TracingConfig.Protocol.GRPC;
                }
            }
        }
        if (endpoint == null) {
            endpoint = protocol == TracingConfig.Protocol.GRPC ? "http://localhost:4317" : "http://localhost:4318";
        } else if (baseOnly && protocol == TracingConfig.Protocol.HTTP_PROTOBUF) {
            endpoint = endpoint.replaceAll("/+$", "") + "/v1/traces"; // the spec: a base URL, the signal's path added
        }
        endpoint = checkedUrl(endpointNode, endpoint);
        Map<String, Secret> headers = headers(otlp.child("headers_env", "Name of the environment variable holding "
                + "the collector's request headers as k=v,k2=v2 (an API key: never written in the file). Unset: "
                + "OTEL_EXPORTER_OTLP_TRACES_HEADERS, else OTEL_EXPORTER_OTLP_HEADERS, else none."), env);
        ConfigNode timeoutNode = otlp.child("timeout", "The longest one export may take; a slower or unreachable "
                + "collector loses that batch (counted in sluice_tracing_spans_dropped_total). Unset: "
                + "OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT (milliseconds), else 1s.");
        Duration timeout = timeoutNode.durationAtLeast(Duration.ofSeconds(1), Duration.ofMillis(10));
        if (timeoutNode.isMissing()) {
            String ms = Optional.ofNullable(env.env(TRACES_ENV + "TIMEOUT")).orElse(env.env(HTTP_ENV + "TIMEOUT"));
            if (ms != null && ms.matches("\\d{1,9}") && Long.parseLong(ms) >= 10) {
                timeout = Duration.ofMillis(Long.parseLong(ms));
            } else if (ms != null) { // a value the operator set and we cannot use: said, never dropped silently
                timeoutNode.reject("OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT=" + ms, "milliseconds, at least 10");
            }
        }
        ConfigNode ratioNode = n.child("sample_ratio", "The share of requests whose trace is recorded and exported, "
                + "0 to 1, decided by trace id (every request still gets a trace id, in its log line and in the "
                + "traceparent its workers get). Unset: OTEL_TRACES_SAMPLER_ARG, else 1.");
        double ratio = ratioNode.doubleIn(1.0, 0, 1, "between 0 and 1");
        if (ratioNode.isMissing()) {
            String arg = env.env("OTEL_TRACES_SAMPLER_ARG");
            double r = -1;
            try {
                r = arg == null ? 1.0 : Double.parseDouble(arg);
            } catch (NumberFormatException e) {
                // refused below
            }
            if (r >= 0 && r <= 1) {
                ratio = r;
            } else {
                ratioNode.reject("OTEL_TRACES_SAMPLER_ARG=" + arg, "a number between 0 and 1");
            }
        }
        ConfigNode serviceNode = n.child("service_name", "The service.name of the gateway's spans. Unset: "
                + "OTEL_SERVICE_NAME, else sluice-gateway.");
        String service = serviceNode.optionalText().orElse(null);
        if (service == null) {
            service = Optional.ofNullable(env.env("OTEL_SERVICE_NAME")).filter(s -> !s.isBlank()).orElse("sluice-gateway");
        }
        boolean honor = n.child("honor_client_sampling", "true: a client's traceparent sampled flag decides whether "
                + "its request is recorded. false: the client's trace id is continued but sample_ratio decides, so a "
                + "client cannot make the gateway record (and export) every request it sends.").bool(false);
        if (n.isMissing() || endpoint == null) {
            return Optional.empty();
        }
        return Optional.of(new TracingConfig(endpoint, protocol, headers, timeout, ratio, service, honor));
    }

    private static String checkedUrl(ConfigNode n, String url) {
        try {
            URI uri = new URI(url);
            if (("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) && uri.getHost() != null
                    && uri.getRawUserInfo() == null) {
                n.inForce(url);
                return url;
            }
        } catch (URISyntaxException e) {
            // refused below
        }
        n.reject(url.indexOf('@') >= 0 ? "(a URL with credentials, not shown)" : url,
                "an http:// or https:// URL with a host and no credentials (those go in headers_env)");
        return null;
    }

    private static Map<String, Secret> headers(ConfigNode n, ConfigReading env) {
        String name = n.optionalScalar(ConfigKey.Type.ENV_NAME);
        String value;
        if (name != null) {
            if (!name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
                n.reject(name, "the name of an environment variable (letters, digits, _)");
                return Map.of();
            }
            n.inForce(name);
            value = env.env(name);
            if ((value == null || value.isBlank()) && !env.explore()) {
                n.reject(name, "the name of a set, non-empty environment variable holding k=v,k2=v2 (" + name + " is "
                        + (value == null ? "unset" : "empty") + ")");
                return Map.of();
            }
        } else {
            value = Optional.ofNullable(env.env(TRACES_ENV + "HEADERS")).orElse(env.env(HTTP_ENV + "HEADERS"));
        }
        Map<String, Secret> out = new LinkedHashMap<>();
        if (value == null || value.isBlank()) {
            return out;
        }
        for (String pair : value.split(",")) {
            int eq = pair.indexOf('=');
            if (eq <= 0) {
                n.reject("(a header list, not shown)", "k=v pairs separated by commas");
                return Map.of();
            }
            // OTEL_EXPORTER_OTLP_HEADERS values are URL-encoded (the specification's W3C baggage format)
            out.put(pair.substring(0, eq).trim(), new Secret(java.net.URLDecoder.decode(pair.substring(eq + 1).trim(),
                    java.nio.charset.StandardCharsets.UTF_8)));
        }
        return out;
    }
}
