package dev.sluice.gateway.config;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The whole gateway configuration, immutable and validated once by {@link ConfigLoader}.
 * Every default lives in the readers ({@link GatewayConfigReader} and the section readers), which
 * also describe each key: {@code docs/configuration.md} and {@code config/gateway.schema.json} are
 * generated from them; {@code config/gateway.yaml} shows every key at its default.
 */
public record GatewayConfig(
        ListenConfig listen,
        DisaggregationMode disaggregation,
        WorkersConfig workers,
        TimeoutsConfig timeouts,
        HttpConfig http,
        UpstreamConfig upstream,
        HealthConfig health,
        AdmissionConfig admission,
        TelemetryConfig telemetry,
        AdminConfig admin,
        RetryConfig retries,
        RoutingConfig routing,
        RequestLogging requestLogging) {

    public GatewayConfig {
        Objects.requireNonNull(listen, "listen");
        Objects.requireNonNull(disaggregation, "disaggregation");
        Objects.requireNonNull(workers, "workers");
        Objects.requireNonNull(timeouts, "timeouts");
        Objects.requireNonNull(http, "http");
        Objects.requireNonNull(upstream, "upstream");
        Objects.requireNonNull(health, "health");
        Objects.requireNonNull(admission, "admission");
        Objects.requireNonNull(telemetry, "telemetry");
        Objects.requireNonNull(admin, "admin");
        Objects.requireNonNull(retries, "retries");
        Objects.requireNonNull(routing, "routing");
        Objects.requireNonNull(requestLogging, "requestLogging");
    }

    /** Where the gateway accepts client traffic. */
    public record ListenConfig(String host, int port, boolean internalEndpoints, java.util.Optional<TlsServerConfig> tls) {
        public ListenConfig(String host, int port) {
            this(host, port, false, java.util.Optional.empty());
        }
    }

    /**
     * The prefill and decode workers the gateway pairs requests across, or (in {@code
     * disaggregation: none}) the unified workers that do both.
     */
    public record WorkersConfig(List<WorkerEndpoint> prefill, List<WorkerEndpoint> decode, List<WorkerEndpoint> unified,
                                Optional<Secret> adminAuthorization) {
        public WorkersConfig {
            prefill = List.copyOf(prefill);
            decode = List.copyOf(decode);
            unified = List.copyOf(unified);
            Objects.requireNonNull(adminAuthorization, "adminAuthorization");
        }

        public WorkersConfig(List<WorkerEndpoint> prefill, List<WorkerEndpoint> decode, List<WorkerEndpoint> unified) {
            this(prefill, decode, unified, Optional.empty());
        }

        public WorkersConfig(List<WorkerEndpoint> prefill, List<WorkerEndpoint> decode) {
            this(prefill, decode, List.of());
        }
    }

    /**
     * One worker's address. {@code bootstrapPort} is only meaningful for prefill workers; null
     * means "the worker's default", sent to the decode as JSON null, as SGLang's router does.
     * {@code authorization} is the {@code Authorization} header value the gateway sends the worker
     * ({@code Bearer <key>} from {@code workers.api_key_env}), printed as {@code ***}.
     */
    public record WorkerEndpoint(String url, String host, int port, Integer bootstrapPort,
                                 Optional<Secret> authorization) {
        public WorkerEndpoint {
            Objects.requireNonNull(authorization, "authorization");
        }

        /** A worker that takes no API key. */
        /** An {@code https://} worker: the gateway talks TLS to it (upstream.ca_file, hostname verified). */
        public boolean tls() {
            return url.startsWith("https://");
        }

        public WorkerEndpoint(String url, String host, int port, Integer bootstrapPort) {
            this(url, host, port, bootstrapPort, Optional.empty());
        }
    }

    /** Request body limits and the client-facing HTTP server. */
    public record HttpConfig(long maxRequestBodyBytes, long maxResponseBodyBytes, int eventLoopThreads,
                             JsonLimits json, ClientLimits client) {
        public HttpConfig(long maxRequestBodyBytes, long maxResponseBodyBytes, int eventLoopThreads) {
            this(maxRequestBodyBytes, maxResponseBodyBytes, eventLoopThreads, JsonLimits.DEFAULTS, ClientLimits.DEFAULTS);
        }
    }

    /** Connection pooling towards workers: per event loop, per worker. */
    public record UpstreamConfig(int maxConnectionsPerWorker, java.time.Duration idleTimeout,
                                 java.util.Optional<java.nio.file.Path> caFile) {
        public UpstreamConfig(int maxConnectionsPerWorker, java.time.Duration idleTimeout) {
            this(maxConnectionsPerWorker, idleTimeout, java.util.Optional.empty());
        }
    }

    /** Polling of every worker's {@code /get_load} and {@code /metrics}; older than {@code staleAfter} is unknown. */
    public record TelemetryConfig(java.time.Duration interval, java.time.Duration timeout, java.time.Duration staleAfter) {
    }

    /** The admin listener ({@code GET /admin/state}), loopback by default. */
    public record AdminConfig(boolean enabled, String host, int port, int recentErrors) {
    }
}
