package dev.sluice.gateway.config;

import dev.sluice.gateway.config.GatewayConfig.AdminConfig;
import dev.sluice.gateway.config.GatewayConfig.HttpConfig;
import dev.sluice.gateway.config.GatewayConfig.ListenConfig;
import dev.sluice.gateway.config.GatewayConfig.TelemetryConfig;
import dev.sluice.gateway.config.GatewayConfig.UpstreamConfig;
import java.time.Duration;
import java.util.List;

/**
 * Reads the whole document: the top-level sections, each key with its default, bounds and meaning
 * (what {@code config/gateway.schema.json} and {@code docs/configuration.md} are generated from).
 */
final class GatewayConfigReader {
    private GatewayConfigReader() {
    }

    static GatewayConfig read(ConfigNode root) {
        root.allowOnly("listen", "disaggregation", "vllm_kv_connector", "workers", "timeouts", "http", "upstream", "health", "retries",
                "routing", "admission", "telemetry", "admin", "logging", "coordination",
                "tracing", "pools", "default_pool");
        ListenConfig listen = listen(root.child("listen", "Where the gateway accepts client traffic."));
        boolean pooled = PoolsConfigReader.present(root);
        // with pools:, the workers and their protocol are each pool's; the top level's sections are their defaults
        PoolParts parts = null;
        if (pooled) {
            PoolsConfigReader.refuseTopLevel(root);
        } else {
            parts = poolParts(root);
        }
        TimeoutsConfig timeouts = timeouts(root.child("timeouts", "Deadlines of one request's life."));
        HttpConfig http = http(root.child("http", "The client-facing HTTP server."));
        UpstreamConfig upstream = upstream(root.child("upstream",
                "Connection pools towards the workers, one per event loop and worker."));
        RetryConfig retries = HealthConfigReader.retries(root.child("retries", "Retries on another prefill/decode pair "
                + "(fresh bootstrap_room and rid), only while nothing has reached the client and after a failure that "
                + "is safe to retry (docs/reliability.md). The request keeps its admission ticket."));
        TelemetryConfig telemetry = telemetry(root.child("telemetry", "Polling of every worker's /get_load and "
                + "/metrics, re-exported as sluice_worker_* gauges and shown in /admin/state."));
        AdminConfig admin = admin(root.child("admin", "The admin listener: GET / (a live status page), GET /admin/state "
                + "(limits, queue, workers, recent errors) and GET /metrics. Keep it on loopback."));
        RequestLogging requestLogging = logging(root.child("logging", "What the gateway writes to its log (stdout; "
                + "journald under systemd). The level is SLUICE_LOG_LEVEL (default INFO)."));
        java.util.Optional<CoordinationConfig> coordination = CoordinationConfigReader.read(root.child("coordination",
                "Several gateway replicas sharing one admission budget through leases in Redis or Valkey "
                + "(docs/scale-out.md): the admission limits above become the whole fleet's. Absent: this replica "
                + "admits the whole budget alone."));
        java.util.Optional<TracingConfig> tracing = TracingConfigReader.read(root.child("tracing", "OpenTelemetry "
                + "traces of every request (docs/observability.md): a server span, its admission, each prefill and "
                + "decode attempt, the KV handoff, aborts; the workers get a traceparent so their own spans join. "
                + "Absent: off. A reload applies a change (on, off, another endpoint or ratio) to requests arriving after it."));
        java.util.function.Supplier<GatewayConfig.Builder> shared = () -> GatewayConfig.builder()
                .coordination(coordination).tracing(tracing).listen(listen).timeouts(timeouts).http(http)
                .upstream(upstream).telemetry(telemetry).admin(admin).retries(retries).requestLogging(requestLogging);
        if (pooled) {
            return PoolsConfigReader.read(root, shared);
        }
        PoolsConfigReader.describeDefaultPool(root);
        return parts.applyTo(shared.get()).build();
    }

    /**
     * What each model pool has of its own (the whole gateway's, without {@code pools:}): the handoff protocol,
     * the workers, health, routing and admission, read from {@code n} (the document's root or a pool's entry).
     */
    static PoolParts poolParts(ConfigNode n) {
        DisaggregationMode mode = n.child("disaggregation", "How the prefill and decode halves hand the KV cache "
                + "over (docs/protocols.md). sglang: SGLang's bootstrap protocol, the same body to both halves at once "
                + "with bootstrap_host/bootstrap_port/bootstrap_room added. vllm: vLLM's kv_transfer_params handoff, "
                + "the prefill leg first (max_tokens 1), then the decode leg. none: no disaggregation; unified SGLang "
                + "or vLLM servers listed under workers.unified.")
                .oneOf(DisaggregationMode.SGLANG, List.of(DisaggregationMode.values()), DisaggregationMode::label);
        ConfigNode connectorNode = n.child("vllm_kv_connector", "The KV connector the vLLM workers run "
                + "(--kv-transfer-config kv_connector), with disaggregation: vllm. nixl (NixlConnector) is what the "
                + "gateway speaks; p2p_nccl and mooncake are refused here, with the reason, rather than failing every "
                + "request (docs/compatibility.md). Ignored in the other modes.");
        VllmConnector connector = connectorNode.oneOf(VllmConnector.NIXL, List.of(VllmConnector.values()),
                VllmConnector::label);
        if (mode == DisaggregationMode.VLLM && connector.unsupported() != null) {
            connectorNode.reject(connector.label(), "nixl: " + connector.unsupported());
        }
        GatewayConfig.WorkersConfig workers = WorkersConfigReader.read(n, mode);
        HealthConfig health = HealthConfigReader.health(n.child("health", "How the gateway decides each worker's "
                + "state (healthy, degraded, ejected, half_open, suspect, draining): active checks, passive signals from live "
                + "traffic, the stall watchdog. Shown in /admin/state and sluice_worker_state; docs/reliability.md."));
        RoutingConfig routing = routing(n.child("routing", "Which worker of each role gets a request, among those "
                + "with room in their admission window (docs/routing.md)."), mode);
        AdmissionConfig admission = AdmissionConfigReader.read(n.child("admission", "Admission control: requests "
                + "wait in the gateway, not in a GPU server's queue (docs/admission.md)."));
        return new PoolParts(mode, workers, health, routing, admission);
    }

    /** One pool's own sections (see {@link #poolParts}). */
    record PoolParts(DisaggregationMode mode, GatewayConfig.WorkersConfig workers, HealthConfig health,
                     RoutingConfig routing, AdmissionConfig admission) {
        GatewayConfig.Builder applyTo(GatewayConfig.Builder b) {
            return b.disaggregation(mode).workers(workers).health(health).routing(routing).admission(admission);
        }
    }

    private static RequestLogging logging(ConfigNode n) {
        n.allowOnly("requests");
        return n.child("requests", "Which requests get a line (rid, route, workers, tokens, tenant, status, outcome, "
                + "times): all; failures (only those not ending ok); none. The line is the largest single cost per "
                + "request above the sockets (docs/benchmarks.md); sluice_requests_total counts every request "
                + "whatever is chosen. Applied on reload.")
                .oneOf(RequestLogging.ALL, java.util.List.of(RequestLogging.values()), RequestLogging::label);
    }

    private static ListenConfig listen(ConfigNode n) {
        n.allowOnly("host", "port", "internal_endpoints", "tls");
        return new ListenConfig(n.child("host", "Address the client-facing HTTP server binds.").text("0.0.0.0"),
                n.child("port", "Port of the client-facing HTTP server; 0 = any free port.").intIn(8080, 0, 65535),
                n.child("internal_endpoints", "Also serve GET /metrics and the per-worker detail of /readiness "
                        + "(worker addresses, states, reasons) on this listener. Off: clients get 404 for /metrics "
                        + "and only the verdict and counts from /readiness; the admin listener serves both.")
                        .bool(false),
                tls(n.child("tls", "TLS on this listener (absent: plain HTTP): TLS 1.3 and 1.2 only, modern "
                        + "ciphers, OpenSSL (BoringSSL) where it loads, the JDK's otherwise.")));
    }

    private static java.util.Optional<TlsServerConfig> tls(ConfigNode n) {
        n.allowOnly("cert_chain", "private_key", "reload_check");
        java.util.Optional<java.nio.file.Path> chain = readableFile(n.child("cert_chain", "PEM file: the server "
                + "certificate, then its intermediates."));
        java.util.Optional<java.nio.file.Path> key = readableFile(n.child("private_key", "PEM file: the private key "
                + "(PKCS#8; PKCS#1 RSA and SEC1 EC keys work with OpenSSL)."));
        Duration every = n.child("reload_check", "How often the two files are checked for a replacement; a changed "
                + "pair that loads is served to new connections, one that does not is logged and the old one kept.")
                .durationAtLeast(Duration.ofSeconds(10), Duration.ofMillis(100));
        boolean named = n.child("cert_chain").optionalText().isPresent() || n.child("private_key").optionalText().isPresent();
        if (n.isMissing() || !named) {
            return java.util.Optional.empty(); // no files named: plain HTTP (reload_check alone means nothing)
        }
        if (chain.isEmpty() || key.isEmpty()) {
            if (!n.reading().hasProblemAt(n.path())) {
                n.reject("(incomplete)", "both cert_chain and private_key");
            }
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(new TlsServerConfig(chain.get(), key.get(), every));
    }

    /** A path that exists and can be read now (the gateway would fail later otherwise). */
    static java.util.Optional<java.nio.file.Path> readableFile(ConfigNode n) {
        java.util.Optional<String> text = n.optionalText();
        if (text.isEmpty()) {
            return java.util.Optional.empty();
        }
        java.nio.file.Path p = java.nio.file.Path.of(text.get());
        if (!java.nio.file.Files.isReadable(p) || java.nio.file.Files.isDirectory(p)) {
            n.reject(text.get(), "a readable file");
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(p);
    }

    private static TimeoutsConfig timeouts(ConfigNode n) {
        n.allowOnly("connect", "first_token", "idle_stream", "request", "abort");
        Duration min = Duration.ofMillis(1);
        return TimeoutsConfig.builder()
                .connect(n.child("connect", "TCP connect to a worker, or waiting for a pooled connection.")
                        .durationAtLeast(Duration.ofSeconds(2), min))
                .firstToken(n.child("first_token",
                        "Dispatch to first token (the first decode chunk; for a non-streamed request, "
                        + "the prefill half finishing). Exceeded: 504, both halves aborted. The outer bound only: "
                        + "health.watchdog catches a stalled worker much sooner.")
                        .durationAtLeast(Duration.ofSeconds(120), min))
                .idleStream(n.child("idle_stream",
                        "Longest gap between two chunks of a started stream. Exceeded: a final error "
                        + "event in the stream, both halves aborted.").durationAtLeast(Duration.ofSeconds(60), min))
                .request(n.child("request",
                        "Longest total life of any request, streamed or not (catches a stuck non-streamed "
                        + "decode).").durationAtLeast(Duration.ofMinutes(10), min))
                .abort(n.child("abort", "How long a POST /abort_request to a worker may take.")
                        .durationAtLeast(Duration.ofSeconds(2), min))
                .build();
    }

    private static HttpConfig http(ConfigNode n) {
        n.allowOnly("max_request_body", "max_response_body", "event_loop_threads", "json", "max_initial_line",
                "max_header_size", "max_headers", "header_timeout", "body_timeout", "idle_timeout", "max_connections");
        return HttpConfig.builder()
                .maxRequestBodyBytes(n.child("max_request_body", "Larger request bodies get 413 body_too_large.")
                        .bytesAtLeast(32L << 20, 1024))
                .maxResponseBodyBytes(n.child("max_response_body",
                        "Cap on a non-streamed worker response the gateway holds (streams are "
                        + "relayed chunk by chunk, never held).").bytesAtLeast(64L << 20, 1024))
                .eventLoopThreads(n.child("event_loop_threads", "Event loop threads; 0 = one per CPU core.")
                        .intIn(0, 0, 1024))
                .json(json(n.child("json", "Limits on a client's JSON body, checked while it is parsed: past one, 400 "
                        + "json_limit and no worker is contacted.")))
                .client(client(n))
                .build();
    }

    /** Client connection limits: defaults in the range HAProxy, nginx and Envoy ship (see ClientLimits). */
    private static ClientLimits client(ConfigNode n) {
        ClientLimits d = ClientLimits.DEFAULTS;
        Duration min = Duration.ofMillis(10);
        return ClientLimits.builder()
                .maxInitialLine(n.child("max_initial_line", "Longest request line (method, target, version); longer: "
                        + "414, closed.").intIn(d.maxInitialLine(), 256, 1 << 20))
                .maxHeaderSize(n.child("max_header_size", "All header lines of a request together, in bytes; more: "
                        + "431, closed.").intIn(d.maxHeaderSize(), 1024, 1 << 20))
                .maxHeaders(n.child("max_headers", "Header fields in one request; more: 431, closed.")
                        .intIn(d.maxHeaders(), 8, 10_000))
                .headerTimeout(n.child("header_timeout", "From a request's first byte to the end of its headers "
                        + "(slowloris); slower: 408, closed.").durationAtLeast(d.headerTimeout(), min))
                .bodyTimeout(n.child("body_timeout", "From the end of a request's headers to the end of its body; "
                        + "slower: 408, closed.").durationAtLeast(d.bodyTimeout(), min))
                .idleTimeout(n.child("idle_timeout", "A keep-alive client connection with no request in progress is "
                        + "closed after this (a streaming response is never idle).").durationAtLeast(d.idleTimeout(), min))
                .maxConnections(n.child("max_connections", "Open client connections; past it a new connection gets 503 "
                        + "too_many_connections and is closed.").intIn(d.maxConnections(), 1, 10_000_000))
                .build();
    }

    private static JsonLimits json(ConfigNode n) {
        n.allowOnly("max_depth", "max_string_length", "max_number_length", "max_name_length");
        JsonLimits d = JsonLimits.DEFAULTS;
        return JsonLimits.builder()
                .maxDepth(n.child("max_depth", "Deepest nesting of arrays and objects (tool schemas nest; 64 is far "
                        + "past any real request and far below a stack overflow).").intIn(d.maxDepth(), 4, 1000))
                .maxStringLength(n.child("max_string_length", "Longest string value, in characters (a base64 image in "
                        + "a data URL is the largest real one).").intIn(d.maxStringLength(), 1024, Integer.MAX_VALUE))
                .maxNumberLength(n.child("max_number_length", "Longest number literal, in characters (no real "
                        + "parameter needs more; a long one costs a BigDecimal parse).").intIn(d.maxNumberLength(), 16, 10_000))
                .maxNameLength(n.child("max_name_length", "Longest object key, in characters.")
                        .intIn(d.maxNameLength(), 16, 100_000))
                .build();
    }

    private static UpstreamConfig upstream(ConfigNode n) {
        n.allowOnly("max_connections_per_worker", "idle_timeout", "ca_file");
        return new UpstreamConfig(
                n.child("max_connections_per_worker", "Connections per event loop to one worker; past it, requests "
                        + "wait up to timeouts.connect.").intIn(1024, 1, 1_000_000),
                n.child("idle_timeout", "Pooled connections idle this long are closed; keep it below the worker's "
                        + "keep-alive timeout (uvicorn's default is 5s).")
                        .durationAtLeast(Duration.ofSeconds(4), Duration.ofMillis(100)),
                readableFile(n.child("ca_file", "PEM file of the CA certificates that https:// workers' certificates "
                        + "must chain to (absent: the JDK's trust store); their host names are always verified.")));
    }

    private static RoutingConfig routing(ConfigNode n, DisaggregationMode mode) {
        RoutingConfig r = RoutingConfigReader.read(n);
        if (r.directDecodeMaxTokens() > 0 && mode != DisaggregationMode.VLLM) {
            n.child("direct_decode_max_tokens").reject(String.valueOf(r.directDecodeMaxTokens()),
                    "0 unless disaggregation: vllm (an SGLang decode server cannot prefill on its own; in none mode "
                            + "every request is direct)");
            return r.toBuilder().directDecodeMaxTokens(0).build();
        }
        return r;
    }

    private static TelemetryConfig telemetry(ConfigNode n) {
        n.allowOnly("interval", "timeout", "stale_after");
        Duration interval = n.child("interval", "Poll period.")
                .durationAtLeast(Duration.ofSeconds(1), Duration.ofMillis(50));
        Duration timeout = n.child("timeout", "One poll slower than this fails (sluice_worker_telemetry_up = 0).")
                .durationAtLeast(Duration.ofSeconds(1), Duration.ofMillis(10));
        Duration staleAfter = n.child("stale_after", "Telemetry older than this reads as unknown (NaN), never as zero "
                + "load.").defaultIs("5 x telemetry.interval")
                .durationAtLeast(interval.multipliedBy(5), interval, "telemetry.interval");
        return new TelemetryConfig(interval, timeout, staleAfter);
    }

    private static AdminConfig admin(ConfigNode n) {
        n.allowOnly("enabled", "host", "port", "recent_errors", "token_file");
        boolean enabled = n.child("enabled", "Whether the admin listener runs.").bool(true);
        ConfigNode hostNode = n.child("host", "Address the admin listener binds; keep it on loopback. Any other "
                + "address (0.0.0.0, a pod's) needs an admin token (SLUICE_ADMIN_TOKEN or token_file).");
        String host = hostNode.text("127.0.0.1");
        int port = n.child("port", "Port of the admin listener; 0 = any free port.").intIn(8081, 0, 65535);
        int recentErrors = n.child("recent_errors", "How many failed or rejected requests /admin/state remembers.")
                .intIn(50, 1, 10_000);
        ConfigNode fileNode = n.child("token_file", "File whose contents (trimmed) are the admin token that POST "
                + "/admin/reload needs as Authorization: Bearer; read at start (a new token needs a restart). Absent: "
                + "the environment variable SLUICE_ADMIN_TOKEN, if set; one of the two is required when host is not "
                + "loopback. Never printed.");
        java.util.Optional<Secret> token = AdminTokens.read(fileNode);
        if (enabled && token.isEmpty() && !AdminConfig.loopback(host) && !n.reading().hasProblemAt(fileNode.path())) {
            hostNode.reject(host, AdminConfig.TOKEN_REQUIRED);
            host = "127.0.0.1"; // a bad value reads as the default, so that reading goes on
        }
        return new AdminConfig(enabled, host, port, recentErrors, token);
    }
}
