package dev.sluice.gateway.server;

import dev.sluice.gateway.api.GenerationRoute;
import java.util.Map;

/** The gateway's route table: which paths exist, with which method, and their metric labels. */
final class Routes {
    /** GET routes answered from a prefill worker (SGLang's PD routers do the same). */
    static final Map<String, String> INFO = Map.of(
            "/v1/models", "models",
            "/get_model_info", "get_model_info",
            "/get_server_info", "get_server_info");

    static final Map<String, String> LOCAL = Map.of(
            "/health", "health",
            "/readiness", "readiness",
            "/metrics", "metrics");

    private Routes() {
    }

    static String pathOf(String uri) {
        int q = uri.indexOf('?');
        return q < 0 ? uri : uri.substring(0, q);
    }

    /** Bounded label: known routes by name, everything else "other". */
    static String metricLabel(String uri) {
        String path = pathOf(uri);
        GenerationRoute g = GenerationRoute.forPath(path);
        if (g != null) {
            return g.label();
        }
        return INFO.getOrDefault(path, LOCAL.getOrDefault(path, "other"));
    }

    /** The route labels of the requests that reach workers (generation and info routes), pre-registered at 0. */
    static java.util.List<String> metricLabels() {
        java.util.List<String> out = new java.util.ArrayList<>();
        for (GenerationRoute g : GenerationRoute.values()) {
            out.add(g.label());
        }
        out.addAll(new java.util.TreeSet<>(INFO.values()));
        return out;
    }

    static String allowedMethod(String path) {
        if (GenerationRoute.forPath(path) != null) {
            return "POST";
        }
        if (INFO.containsKey(path) || LOCAL.containsKey(path)) {
            return "GET";
        }
        return null;
    }
}
