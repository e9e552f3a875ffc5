package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.netty.channel.Channel;
import io.netty.handler.codec.http.HttpMethod;

/**
 * The routes of a simulated vLLM server ({@code vllm serve}): POST {@code /v1/chat/completions} and
 * {@code /v1/completions}; GET {@code /health}, {@code /v1/models}, {@code /version},
 * {@code /metrics}; POST {@code /reset_prefix_cache}; and the simulator's {@code /sim/stats} and
 * {@code /sim/faults}. A generation request's {@code X-data-parallel-rank} header names the engine
 * ({@link DpDispatch#vllmHeader}). Everything else, SGLang's {@code /generate}, {@code /abort_request},
 * {@code /get_load}, {@code /health_generate} and info routes included, is FastAPI's 404
 * {@code {"detail":"Not Found"}}.
 */
final class VllmRoutes {
    private VllmRoutes() {
    }

    static void handle(SimWorker w, SimHttpHandler handler, Channel ch, HttpMethod method, String path, JsonNode body,
                       String requestId, String dpRankHeader, boolean keepAlive, long now) {
        Route route = Route.of(path);
        if (route != null && route != Route.GENERATE && method.equals(HttpMethod.POST)) {
            RequestIntake.generation(w, handler, ch, route, body, requestId, dpRankHeader, keepAlive, now);
            return;
        }
        boolean get = method.equals(HttpMethod.GET) || method.equals(HttpMethod.HEAD);
        switch (get ? "GET " + path : method.name() + " " + path) {
            case "GET /health" -> {
                int status = w.faults.healthStatus();
                Responses.text(ch, status > 0 ? status : 200, null, "", keepAlive);
            }
            case "GET /v1/models" -> Responses.json(ch, 200, ServerInfo.models(w), keepAlive);
            case "GET /version" -> Responses.json(ch, 200,
                    JsonNodeFactory.instance.objectNode().put("version", w.cfg.serverVersion()), keepAlive);
            case "GET /metrics" -> Responses.text(ch, 200, SimMetrics.CONTENT_TYPE, w.renderMetrics(), keepAlive);
            case "POST /reset_prefix_cache" -> {
                w.prefixCache.clear();
                Responses.text(ch, 200, null, "", keepAlive);
            }
            case "GET /sim/stats" -> Responses.json(ch, 200, SseWriter.JSON.valueToTree(w.stats()), keepAlive);
            case "GET /sim/faults" -> Responses.json(ch, 200, w.faults.toJson(), keepAlive);
            case "POST /sim/faults" -> SimHttpHandler.simFaults(w, ch, body, keepAlive);
            default -> Responses.json(ch, 404, JsonNodeFactory.instance.objectNode().put("detail", "Not Found"),
                    keepAlive);
        }
    }
}
