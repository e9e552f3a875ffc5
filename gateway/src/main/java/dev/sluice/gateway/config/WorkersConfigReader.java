package dev.sluice.gateway.config;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Reads {@code workers:}: the prefill and decode lists (or, in {@code disaggregation: none}, the
 * unified one) and the workers' API key, named by {@code api_key_env} and read from the environment.
 */
final class WorkersConfigReader {
    private static final String URL = "The worker's base URL, http://host:port or https://host:port (TLS: upstream.ca_file), without a path.";

    private WorkersConfigReader() {
    }

    static WorkersConfig read(ConfigNode root, DisaggregationMode mode) {
        ConfigNode n = root.child("workers", "The workers requests go to: workers.prefill and workers.decode, or "
                + "workers.unified in disaggregation: none. What differs per host can come from the environment "
                + "(SLUICE_WORKERS_PREFILL, ...; see Overrides).");
        n.declare("prefill", "decode", "unified", "api_key_env", "admin_api_key_env", "discovery");
        boolean unified = mode == DisaggregationMode.NONE;
        boolean present = n.require(root, unified ? "a workers.unified list in disaggregation: none"
                : "workers.prefill and workers.decode lists");
        if (unified) {
            n.allowOnly("unified", "api_key_env", "admin_api_key_env", "discovery");
        } else {
            n.allowOnly("prefill", "decode", "api_key_env", "admin_api_key_env", "discovery");
        }
        Optional<Secret> auth = authorization(n.child("api_key_env", "Name of the environment variable holding the "
                + "workers' API key (what SGLang's and vLLM's --api-key set). Sent to every worker, on generation "
                + "requests and on the gateway's own calls (health checks, telemetry, aborts, info GETs), as "
                + "Authorization: Bearer <key>; the client's own Authorization header is never forwarded. The gateway "
                + "refuses to start when the variable is unset or empty; check-config prints the key as ***. "
                + "Absent: no key is sent."));
        Optional<Secret> admin = authorization(n.child("admin_api_key_env", "Name of the environment variable holding "
                + "the workers' admin API key (SGLang's --admin-api-key). SGLang's /abort_request needs it once it is "
                + "set (auth level ADMIN_OPTIONAL: the plain API key is refused there), so the gateway sends it, as "
                + "Authorization: Bearer <key>, on its aborts only. Absent: aborts carry the api_key_env key, if any."));
        DiscoveryConfig discovery = DiscoveryConfigReader.read(n, unified);
        if (unified) {
            List<WorkerEndpoint> list = endpoints(n.child("unified", "Unified workers, each prefilling and decoding "
                    + "its own requests (disaggregation: none only, instead of prefill and decode)."), false, auth,
                    "One unified worker.");
            if (present && list.isEmpty() && discovery.unified().isEmpty() && !n.reading().hasProblemAt(n.path() + ".unified")) {
                n.child("unified").reject(written(n.child("unified")), "at least one worker");
            }
            return new WorkersConfig(List.of(), List.of(), list, admin, discovery, auth);
        }
        List<WorkerEndpoint> prefill = endpoints(n.child("prefill", "Prefill workers: at least one (not in "
                + "disaggregation: none)."), true, auth, "One prefill worker.");
        List<WorkerEndpoint> decode = endpoints(n.child("decode", "Decode workers: at least one (not in "
                + "disaggregation: none)."), false, auth, "One decode worker.");
        if (present && prefill.isEmpty() && discovery.prefill().isEmpty() && !n.reading().hasProblemAt(n.path() + ".prefill")) {
            n.child("prefill").reject(written(n.child("prefill")), "at least one prefill worker");
        }
        if (present && decode.isEmpty() && discovery.decode().isEmpty() && !n.reading().hasProblemAt(n.path() + ".decode")) {
            n.child("decode").reject(written(n.child("decode")), "at least one decode worker");
        }
        return new WorkersConfig(prefill, decode, List.of(), admin, discovery, auth);
    }

    private static String written(ConfigNode list) {
        return list.isMissing() ? "missing" : "empty";
    }

    private static Optional<Secret> authorization(ConfigNode n) {
        Optional<String> name = Optional.ofNullable(n.optionalScalar(ConfigKey.Type.ENV_NAME));
        if (name.isPresent() && !name.get().matches("[A-Za-z_][A-Za-z0-9_]*")) {
            n.reject(name.get(), "the name of an environment variable (letters, digits, _)");
            return Optional.empty();
        }
        if (name.isEmpty()) {
            return Optional.empty();
        }
        n.inForce(name.get());
        String key = n.reading().env(name.get());
        if (key == null || key.isBlank()) {
            if (!n.reading().explore()) {
                n.reject(name.get(), "the name of a set, non-empty environment variable holding the workers' API key "
                        + "(" + name.get() + " is " + (key == null ? "unset" : "empty") + ")");
            }
            return Optional.empty();
        }
        return Optional.of(new Secret("Bearer " + key.trim()));
    }

    /** A worker's base URL, {@code http://host:port} without a path; null (problem recorded) when missing or bad. */
    private static String url(ConfigNode n) {
        String raw = n.scalar(ConfigKey.Type.URL, "a URL such as http://10.0.0.1:30000");
        if (raw == null) {
            return null;
        }
        String url = raw.replaceAll("/+$", "");
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            n.reject(url, "an http:// or https:// URL");
            return null;
        }
        if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null) {
            n.reject(url, "an http:// or https:// URL with a host");
            return null;
        }
        if (uri.getRawUserInfo() != null) {
            // the gateway sends no credentials from a URL, and the URL is shown in logs, metrics and /admin/state:
            // say so without repeating the secret
            n.reject(url.replace(uri.getRawUserInfo() + "@", "***@"), "a URL without user:password@ (the gateway "
                    + "never sends it; a worker's API key goes in workers.api_key_env)");
            return null;
        }
        if ((uri.getPath() != null && !uri.getPath().isEmpty()) || uri.getQuery() != null || uri.getFragment() != null) {
            n.reject(url, "a URL without a path; routes are appended by the gateway");
            return null;
        }
        n.inForce(url);
        return url;
    }

    private static List<WorkerEndpoint> endpoints(ConfigNode list, boolean prefill, Optional<Secret> auth,
                                                  String itemDescription) {
        List<WorkerEndpoint> out = new ArrayList<>();
        for (ConfigNode item : list.items(1, false)) {
            item.describe(itemDescription);
            if (prefill) {
                item.allowOnly("url", "bootstrap_port");
            } else {
                item.allowOnly("url");
            }
            String url = url(item.child("url", URL));
            Optional<Integer> bootstrap = prefill ? item.child("bootstrap_port", "The prefill's "
                    + "--disaggregation-bootstrap-port (sglang mode). Absent: null is sent, meaning the server's "
                    + "default.").optionalInt(1, 65535) : Optional.empty();
            if (url != null) {
                out.add(WorkerEndpoint.of(url, bootstrap.orElse(null), auth));
            }
        }
        return out;
    }
}
