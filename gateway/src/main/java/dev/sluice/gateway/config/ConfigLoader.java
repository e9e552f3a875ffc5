package dev.sluice.gateway.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.sluice.gateway.config.GatewayConfig.AdminConfig;
import dev.sluice.gateway.config.GatewayConfig.TelemetryConfig;
import dev.sluice.gateway.config.GatewayConfig.HttpConfig;
import dev.sluice.gateway.config.GatewayConfig.ListenConfig;
import dev.sluice.gateway.config.GatewayConfig.UpstreamConfig;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/** Reads the YAML file, applies defaults, validates, and returns an immutable {@link GatewayConfig}. */
public final class ConfigLoader {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    private ConfigLoader() {
    }

    public static GatewayConfig load(Path file) {
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new ConfigException(file + ": no such file");
        } catch (IOException e) {
            throw new ConfigException(file + ": cannot read (" + e.getMessage() + ")", e);
        }
        return parse(text, file.toString());
    }

    public static GatewayConfig parse(String yaml, String source) {
        JsonNode tree;
        try {
            tree = YAML.readTree(yaml);
        } catch (JsonProcessingException e) {
            throw new ConfigException(source + ": not valid YAML (" + e.getOriginalMessage() + ")", e);
        }
        if (tree == null || tree.isMissingNode() || tree.isNull()) {
            throw new ConfigException(source + ": empty configuration (expected: at least workers.prefill and workers.decode)");
        }
        ConfigNode root = new ConfigNode(tree, "")
                .allowOnly(Set.of("listen", "disaggregation", "workers", "timeouts", "http", "upstream", "health",
                        "admission", "telemetry", "admin", "retries", "routing"));
        DisaggregationMode mode = mode(root.child("disaggregation"));
        return new GatewayConfig(listen(root.child("listen")), mode, workers(root.child("workers"), mode), timeouts(root.child("timeouts")), http(root.child("http")),
                upstream(root.child("upstream")), health(root.child("health")),
                AdmissionConfigReader.read(root.child("admission")), telemetry(root.child("telemetry")),
                admin(root.child("admin")), retries(root.child("retries")),
                routing(root.child("routing"), mode));
    }

    private static ListenConfig listen(ConfigNode n) {
        n.allowOnly(Set.of("host", "port"));
        return new ListenConfig(n.child("host").text("0.0.0.0"), n.child("port").intIn(8080, 0, 65535));
    }

    private static DisaggregationMode mode(ConfigNode n) {
        String v = n.text("sglang").toLowerCase(Locale.ROOT);
        for (DisaggregationMode m : DisaggregationMode.values()) {
            if (m.label().equals(v)) {
                return m;
            }
        }
        throw n.fail(v, "one of sglang, vllm, none");
    }

    private static WorkersConfig workers(ConfigNode n, DisaggregationMode mode) {
        if (mode == DisaggregationMode.NONE) {
            if (n.isMissing()) {
                throw new ConfigException("workers: missing (expected: a workers.unified list in disaggregation: none)");
            }
            n.allowOnly(Set.of("unified"));
            List<WorkerEndpoint> unified = endpoints(n.child("unified"), false);
            if (unified.isEmpty()) {
                throw new ConfigException("workers.unified: empty (expected: at least one worker)");
            }
            return new WorkersConfig(List.of(), List.of(), unified);
        }
        if (n.isMissing()) {
            throw new ConfigException("workers: missing (expected: workers.prefill and workers.decode lists)");
        }
        n.allowOnly(Set.of("prefill", "decode"));
        List<WorkerEndpoint> prefill = endpoints(n.child("prefill"), true);
        List<WorkerEndpoint> decode = endpoints(n.child("decode"), false);
        if (prefill.isEmpty()) {
            throw new ConfigException("workers.prefill: empty (expected: at least one prefill worker)");
        }
        if (decode.isEmpty()) {
            throw new ConfigException("workers.decode: empty (expected: at least one decode worker)");
        }
        return new WorkersConfig(prefill, decode);
    }

    private static List<WorkerEndpoint> endpoints(ConfigNode list, boolean prefill) {
        List<WorkerEndpoint> out = new ArrayList<>();
        for (ConfigNode item : list.items()) {
            item.allowOnly(prefill ? Set.of("url", "bootstrap_port") : Set.of("url"));
            ConfigNode urlNode = item.child("url");
            String url = urlNode.requiredText().replaceAll("/+$", "");
            URI uri;
            try {
                uri = new URI(url);
            } catch (URISyntaxException e) {
                throw urlNode.fail(url, "an http:// URL");
            }
            if (!"http".equals(uri.getScheme()) || uri.getHost() == null) {
                throw urlNode.fail(url, "an http:// URL with a host");
            }
            if (uri.getPath() != null && !uri.getPath().isEmpty()) {
                throw urlNode.fail(url, "a URL without a path; routes are appended by the gateway");
            }
            int port = uri.getPort() == -1 ? 80 : uri.getPort();
            Integer bootstrap = prefill ? item.child("bootstrap_port").optionalInt(1, 65535) : null;
            out.add(new WorkerEndpoint(url, uri.getHost(), port, bootstrap));
        }
        return out;
    }

    private static TimeoutsConfig timeouts(ConfigNode n) {
        n.allowOnly(Set.of("connect", "first_token", "idle_stream", "request", "abort"));
        Duration min = Duration.ofMillis(1);
        return new TimeoutsConfig(
                n.child("connect").durationAtLeast(Duration.ofSeconds(2), min),
                n.child("first_token").durationAtLeast(Duration.ofSeconds(120), min),
                n.child("idle_stream").durationAtLeast(Duration.ofSeconds(60), min),
                n.child("request").durationAtLeast(Duration.ofMinutes(10), min),
                n.child("abort").durationAtLeast(Duration.ofSeconds(2), min));
    }

    private static HttpConfig http(ConfigNode n) {
        n.allowOnly(Set.of("max_request_body", "max_response_body", "event_loop_threads"));
        return new HttpConfig(
                n.child("max_request_body").bytesAtLeast(32L << 20, 1024),
                n.child("max_response_body").bytesAtLeast(64L << 20, 1024),
                n.child("event_loop_threads").intIn(0, 0, 1024));
    }

    private static UpstreamConfig upstream(ConfigNode n) {
        n.allowOnly(Set.of("max_connections_per_worker", "idle_timeout"));
        return new UpstreamConfig(
                n.child("max_connections_per_worker").intIn(1024, 1, 1_000_000),
                n.child("idle_timeout").durationAtLeast(Duration.ofSeconds(4), Duration.ofMillis(100)));
    }

    private static TelemetryConfig telemetry(ConfigNode n) {
        n.allowOnly(Set.of("interval", "timeout", "stale_after"));
        Duration interval = n.child("interval").durationAtLeast(Duration.ofSeconds(1), Duration.ofMillis(50));
        Duration staleAfter = n.child("stale_after").durationAtLeast(interval.multipliedBy(5), interval);
        return new TelemetryConfig(interval, n.child("timeout").durationAtLeast(Duration.ofSeconds(1), Duration.ofMillis(10)),
                staleAfter);
    }

    private static AdminConfig admin(ConfigNode n) {
        n.allowOnly(Set.of("host", "port", "enabled", "recent_errors"));
        return new AdminConfig(n.child("enabled").bool(true), n.child("host").text("127.0.0.1"),
                n.child("port").intIn(8081, 0, 65535), n.child("recent_errors").intIn(50, 1, 10_000));
    }

    private static HealthConfig health(ConfigNode n) {
        n.allowOnly(Set.of("interval", "timeout", "unhealthy_threshold", "healthy_threshold", "generate_interval",
                "generate_timeout", "decode_max_kv_usage", "passive", "watchdog"));
        Duration ms = Duration.ofMillis(1);
        double kv = n.child("decode_max_kv_usage").doubleAtLeast(0.98, 0.01);
        if (kv > 1.0) {
            throw n.child("decode_max_kv_usage").fail(String.valueOf(kv), "a fraction in (0, 1]");
        }
        return new HealthConfig(
                n.child("interval").durationAtLeast(Duration.ofSeconds(2), Duration.ofMillis(50)),
                n.child("timeout").durationAtLeast(Duration.ofSeconds(1), Duration.ofMillis(10)),
                n.child("unhealthy_threshold").intIn(2, 1, 100),
                n.child("healthy_threshold").intIn(2, 1, 100),
                n.child("generate_interval").durationAtLeast(Duration.ofSeconds(10), Duration.ZERO),
                n.child("generate_timeout").durationAtLeast(Duration.ofSeconds(5), Duration.ofMillis(10)),
                kv, passive(n.child("passive")), watchdog(n.child("watchdog")));
    }

    private static HealthConfig.Passive passive(ConfigNode n) {
        n.allowOnly(Set.of("window", "consecutive_failures", "failure_ratio", "min_requests", "base_ejection",
                "max_ejection", "half_open_requests", "max_ejected_percent"));
        double ratio = n.child("failure_ratio").doubleAtLeast(0.5, 0.01);
        if (ratio > 1.0) {
            throw n.child("failure_ratio").fail(String.valueOf(ratio), "a fraction in (0, 1]");
        }
        Duration base = n.child("base_ejection").durationAtLeast(Duration.ofSeconds(10), Duration.ofMillis(10));
        return new HealthConfig.Passive(
                n.child("window").durationAtLeast(Duration.ofSeconds(30), Duration.ofMillis(100)),
                n.child("consecutive_failures").intIn(3, 1, 1000),
                ratio,
                n.child("min_requests").intIn(10, 1, 100_000),
                base,
                n.child("max_ejection").durationAtLeast(Duration.ofMinutes(5), base),
                n.child("half_open_requests").intIn(2, 1, 1000),
                n.child("max_ejected_percent").intIn(100, 0, 100));
    }

    private static HealthConfig.Watchdog watchdog(ConfigNode n) {
        n.allowOnly(Set.of("prefill_factor", "prefill_floor", "first_token_after_prefill"));
        return new HealthConfig.Watchdog(
                n.child("prefill_factor").doubleAtLeast(3.0, 1.0),
                n.child("prefill_floor").durationAtLeast(Duration.ofSeconds(5), Duration.ofMillis(10)),
                n.child("first_token_after_prefill").durationAtLeast(Duration.ofSeconds(3), Duration.ofMillis(10)));
    }

    private static RoutingConfig routing(ConfigNode n, DisaggregationMode mode) {
        RoutingConfig r = RoutingConfigReader.read(n);
        if (r.directDecodeMaxTokens() > 0 && mode != DisaggregationMode.VLLM) {
            throw n.child("direct_decode_max_tokens").fail(String.valueOf(r.directDecodeMaxTokens()),
                    "0 unless disaggregation: vllm (an SGLang decode server cannot prefill on its own; in none mode "
                            + "every request is direct)");
        }
        return r;
    }

    private static RetryConfig retries(ConfigNode n) {
        n.allowOnly(Set.of("max_retries", "backoff_base", "backoff_max", "jitter"));
        Duration base = n.child("backoff_base").durationAtLeast(Duration.ofMillis(50), Duration.ZERO);
        double jitter = n.child("jitter").doubleAtLeast(0.5, 0.0);
        if (jitter > 1.0) {
            throw n.child("jitter").fail(String.valueOf(jitter), "a fraction in [0, 1]");
        }
        return new RetryConfig(n.child("max_retries").intIn(2, 0, 10), base,
                n.child("backoff_max").durationAtLeast(Duration.ofSeconds(1), base), jitter);
    }
}
