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
        RequestLogging requestLogging,
        Optional<CoordinationConfig> coordination,
        Optional<TracingConfig> tracing,
        PoolsConfig pools) {

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
        Objects.requireNonNull(coordination, "coordination");
        Objects.requireNonNull(tracing, "tracing");
        Objects.requireNonNull(pools, "pools");
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return builder().listen(listen).disaggregation(disaggregation).workers(workers).timeouts(timeouts).http(http)
                .upstream(upstream).health(health).admission(admission).telemetry(telemetry).admin(admin)
                .retries(retries).routing(routing).requestLogging(requestLogging).coordination(coordination)
                .tracing(tracing).pools(pools);
    }

    /**
     * Thirteen sections, each required, and the optional coordination; {@link #build} checks what depends on the disaggregation
     * mode (which worker lists it takes, whether a request may skip the prefill).
     */
    public static final class Builder {
        private ListenConfig listen;
        private DisaggregationMode disaggregation;
        private WorkersConfig workers;
        private TimeoutsConfig timeouts;
        private HttpConfig http;
        private UpstreamConfig upstream;
        private HealthConfig health;
        private AdmissionConfig admission;
        private TelemetryConfig telemetry;
        private AdminConfig admin;
        private RetryConfig retries;
        private RoutingConfig routing;
        private RequestLogging requestLogging;
        private Optional<CoordinationConfig> coordination = Optional.empty();
        private Optional<TracingConfig> tracing = Optional.empty();
        private PoolsConfig pools = PoolsConfig.IMPLICIT;

        private Builder() {
        }

        /** The model pools; {@link PoolsConfig#IMPLICIT} (the default): one pool that takes any model. */
        public Builder pools(PoolsConfig v) {
            pools = KeyCheck.present("pools", v);
            return this;
        }

        /** Fleet coordination; empty (the default): this replica admits the whole budget alone. */
        public Builder coordination(Optional<CoordinationConfig> v) {
            coordination = KeyCheck.present("coordination", v);
            return this;
        }

        /** OpenTelemetry tracing; empty (the default): off. */
        public Builder tracing(Optional<TracingConfig> v) {
            tracing = KeyCheck.present("tracing", v);
            return this;
        }

        public Builder listen(ListenConfig v) {
            listen = KeyCheck.present("listen", v);
            return this;
        }

        public Builder disaggregation(DisaggregationMode v) {
            disaggregation = KeyCheck.present("disaggregation", v);
            return this;
        }

        public Builder workers(WorkersConfig v) {
            workers = KeyCheck.present("workers", v);
            return this;
        }

        public Builder timeouts(TimeoutsConfig v) {
            timeouts = KeyCheck.present("timeouts", v);
            return this;
        }

        public Builder http(HttpConfig v) {
            http = KeyCheck.present("http", v);
            return this;
        }

        public Builder upstream(UpstreamConfig v) {
            upstream = KeyCheck.present("upstream", v);
            return this;
        }

        public Builder health(HealthConfig v) {
            health = KeyCheck.present("health", v);
            return this;
        }

        public Builder admission(AdmissionConfig v) {
            admission = KeyCheck.present("admission", v);
            return this;
        }

        /** The admission set so far, for {@link ConfigSection#ADMISSION_TOKENIZER} to set its tokenizer in. */
        AdmissionConfig admission() {
            return KeyCheck.set("admission", admission);
        }

        public Builder telemetry(TelemetryConfig v) {
            telemetry = KeyCheck.present("telemetry", v);
            return this;
        }

        public Builder admin(AdminConfig v) {
            admin = KeyCheck.present("admin", v);
            return this;
        }

        public Builder retries(RetryConfig v) {
            retries = KeyCheck.present("retries", v);
            return this;
        }

        public Builder routing(RoutingConfig v) {
            routing = KeyCheck.present("routing", v);
            return this;
        }

        /** YAML {@code logging.requests}. */
        public Builder requestLogging(RequestLogging v) {
            requestLogging = KeyCheck.present("logging.requests", v);
            return this;
        }

        public GatewayConfig build() {
            DisaggregationMode mode = KeyCheck.set("disaggregation", disaggregation);
            WorkersConfig w = KeyCheck.set("workers", workers);
            RoutingConfig r = KeyCheck.set("routing", routing);
            // the worker lists a mode does not use would be silently ignored: a mix-up, not a choice
            if (mode == DisaggregationMode.NONE && !(w.prefill().isEmpty() && w.decode().isEmpty())) {
                throw KeyCheck.rejected("workers", "prefill or decode workers", "only workers.unified in "
                        + "disaggregation: none");
            }
            if (mode != DisaggregationMode.NONE && !w.unified().isEmpty()) {
                throw KeyCheck.rejected("workers.unified", w.unified().size() + " workers",
                        "empty unless disaggregation: none");
            }
            if (r.directDecodeMaxTokens() > 0 && mode != DisaggregationMode.VLLM) {
                throw KeyCheck.rejected("routing.direct_decode_max_tokens", String.valueOf(r.directDecodeMaxTokens()),
                        "0 unless disaggregation: vllm");
            }
            AdmissionConfig a = KeyCheck.set("admission", admission);
            // one source of truth for the model's tokenizer: the KV event view reads admission's
            if (r.kvEvents().filter(kv -> kv.tokenizer() == RoutingConfig.Tokenizer.HF).isPresent()
                    && a.tokenizer().tokenizerJson().isEmpty()) {
                throw KeyCheck.rejected("routing.kv_events.tokenizer", "hf",
                        "sim unless admission.tokenizer.path names the model's tokenizer.json");
            }
            return new GatewayConfig(KeyCheck.set("listen", listen), mode, w, KeyCheck.set("timeouts", timeouts),
                    KeyCheck.set("http", http), KeyCheck.set("upstream", upstream), KeyCheck.set("health", health),
                    KeyCheck.set("admission", admission), KeyCheck.set("telemetry", telemetry),
                    KeyCheck.set("admin", admin), KeyCheck.set("retries", retries), r,
                    KeyCheck.set("logging.requests", requestLogging), coordination, tracing, pools);
        }
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
                                Optional<Secret> adminAuthorization, DiscoveryConfig discovery,
                                Optional<Secret> authorization) {
        public WorkersConfig {
            prefill = List.copyOf(prefill);
            decode = List.copyOf(decode);
            unified = List.copyOf(unified);
            Objects.requireNonNull(adminAuthorization, "adminAuthorization");
            Objects.requireNonNull(discovery, "discovery");
            Objects.requireNonNull(authorization, "authorization");
        }

        public WorkersConfig(List<WorkerEndpoint> prefill, List<WorkerEndpoint> decode, List<WorkerEndpoint> unified,
                             Optional<Secret> adminAuthorization) {
            this(prefill, decode, unified, adminAuthorization, DiscoveryConfig.NONE, Optional.empty());
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

        /** An {@code https://} worker: the gateway talks TLS to it (upstream.ca_file, hostname verified). */
        public boolean tls() {
            return url.startsWith("https://");
        }

        public WorkerEndpoint(String url, String host, int port, Integer bootstrapPort) { // takes no API key
            this(url, host, port, bootstrapPort, Optional.empty());
        }

        /**
         * The worker at {@code url} ({@code http://host:port} or {@code https://...}, no path): its host
         * and port come from the URL (80 or 443 when it names none), so they cannot disagree with it.
         *
         * @param bootstrapPort a prefill's bootstrap port, or null: the worker's default
         */
        public static WorkerEndpoint of(String url, Integer bootstrapPort, Optional<Secret> authorization) {
            java.net.URI uri;
            try {
                uri = new java.net.URI(Objects.requireNonNull(url, "url"));
            } catch (java.net.URISyntaxException e) {
                throw KeyCheck.rejected("workers[].url", url, "an http:// or https:// URL");
            }
            boolean https = "https".equals(uri.getScheme());
            if (!(https || "http".equals(uri.getScheme())) || uri.getHost() == null) {
                throw KeyCheck.rejected("workers[].url", url, "an http:// or https:// URL with a host");
            }
            if (bootstrapPort != null) {
                KeyCheck.in("workers[].bootstrap_port", bootstrapPort, 1, 65535);
            }
            int port = uri.getPort() != -1 ? uri.getPort() : https ? 443 : 80;
            return new WorkerEndpoint(url, uri.getHost(), port, bootstrapPort, authorization);
        }
    }

    /** Request body limits and the client-facing HTTP server. */
    public record HttpConfig(long maxRequestBodyBytes, long maxResponseBodyBytes, int eventLoopThreads,
                             JsonLimits json, ClientLimits client) {
        public HttpConfig(long maxRequestBodyBytes, long maxResponseBodyBytes, int eventLoopThreads) {
            this(maxRequestBodyBytes, maxResponseBodyBytes, eventLoopThreads, JsonLimits.DEFAULTS, ClientLimits.DEFAULTS);
        }

        public static Builder builder() {
            return new Builder();
        }

        public Builder toBuilder() {
            return builder().maxRequestBodyBytes(maxRequestBodyBytes).maxResponseBodyBytes(maxResponseBodyBytes)
                    .eventLoopThreads(eventLoopThreads).json(json).client(client);
        }

        /** The two body limits are adjacent longs: named here. JSON and client limits default to their DEFAULTS. */
        public static final class Builder {
            private Long maxRequestBodyBytes;
            private Long maxResponseBodyBytes;
            private Integer eventLoopThreads;
            private JsonLimits json = JsonLimits.DEFAULTS;
            private ClientLimits client = ClientLimits.DEFAULTS;

            private Builder() {
            }

            public Builder maxRequestBodyBytes(long v) {
                maxRequestBodyBytes = KeyCheck.atLeast("http.max_request_body", v, 1024L);
                return this;
            }

            public Builder maxResponseBodyBytes(long v) {
                maxResponseBodyBytes = KeyCheck.atLeast("http.max_response_body", v, 1024L);
                return this;
            }

            /** 0: one per CPU core. */
            public Builder eventLoopThreads(int v) {
                eventLoopThreads = KeyCheck.atLeast("http.event_loop_threads", v, 0);
                return this;
            }

            public Builder json(JsonLimits v) {
                json = KeyCheck.present("http.json", v);
                return this;
            }

            public Builder client(ClientLimits v) {
                client = KeyCheck.present("http", v);
                return this;
            }

            public HttpConfig build() {
                return new HttpConfig(KeyCheck.set("http.max_request_body", maxRequestBodyBytes),
                        KeyCheck.set("http.max_response_body", maxResponseBodyBytes),
                        KeyCheck.set("http.event_loop_threads", eventLoopThreads), json, client);
            }
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

    /**
     * The admin listener ({@code GET /admin/state}, {@code /metrics}, {@code POST /admin/reload}), loopback by
     * default.
     *
     * @param token the bearer token {@code POST /admin/reload} needs ({@code SLUICE_ADMIN_TOKEN} or the contents
     *              of {@code admin.token_file}); required when the listener is not on loopback
     */
    public record AdminConfig(boolean enabled, String host, int port, int recentErrors, Optional<Secret> token) {
        /** What a listener others can reach needs, in the message that refuses one without it. */
        public static final String TOKEN_REQUIRED = "a loopback address (127.0.0.1, ::1, localhost), or an admin token "
                + "in SLUICE_ADMIN_TOKEN or admin.token_file: anyone who reaches this listener could POST /admin/reload";

        public AdminConfig {
            Objects.requireNonNull(host, "host");
            Objects.requireNonNull(token, "token");
            if (enabled && token.isEmpty() && !loopback(host)) {
                throw KeyCheck.rejected("admin.host", host, TOKEN_REQUIRED);
            }
        }

        /** On loopback, without a token (what most tests and single-host setups run). */
        public AdminConfig(boolean enabled, String host, int port, int recentErrors) {
            this(enabled, host, port, recentErrors, Optional.empty());
        }

        /** Whether {@code host} binds loopback only ({@link Loopback#only}). */
        public static boolean loopback(String host) {
            return Loopback.only(host);
        }
    }
}
