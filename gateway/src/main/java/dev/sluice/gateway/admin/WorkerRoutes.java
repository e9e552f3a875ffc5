package dev.sluice.gateway.admin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.discovery.WorkerDirectory;
import dev.sluice.gateway.discovery.WorkerDirectory.AdminResult;
import io.netty.handler.codec.http.HttpMethod;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker registration API of the admin listener: {@code POST /admin/workers} (add to a static role
 * list), {@code POST /admin/workers/{id}/drain}, {@code DELETE /admin/workers/{id}}. Answers are JSON;
 * errors in the OpenAI form. The token check is the listener's.
 */
final class WorkerRoutes {
    private static final Logger log = LoggerFactory.getLogger(WorkerRoutes.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    static final String PREFIX = "/admin/workers";

    /** A status and a JSON body. */
    record Reply(int status, String body) {
    }

    /** Each model pool's worker directory, by pool name (one, {@code default}, without {@code pools:}), as of now. */
    private final java.util.function.Supplier<java.util.Map<String, WorkerDirectory>> directories;
    private final String defaultPool;

    WorkerRoutes(java.util.function.Supplier<java.util.Map<String, WorkerDirectory>> directories, String defaultPool) {
        this.directories = directories;
        this.defaultPool = defaultPool;
    }

    /** Drain or delete {@code id} in the pool that has it (a worker's name is unique across pools). */
    private AdminResult inPoolOf(String id, java.util.function.Function<WorkerDirectory, AdminResult> call) {
        AdminResult last = null;
        for (WorkerDirectory d : directories.get().values()) {
            last = call.apply(d);
            if (last.status() != 404) {
                return last;
            }
        }
        return last;
    }

    static boolean matches(String path) {
        return path.equals(PREFIX) || path.startsWith(PREFIX + "/");
    }

    Reply handle(HttpMethod method, String path, byte[] body) {
        String rest = path.substring(PREFIX.length());
        if (rest.isEmpty() || rest.equals("/")) {
            return method.equals(HttpMethod.POST) ? add(body) : notAllowed("POST /admin/workers");
        }
        String[] parts = rest.substring(1).split("/", -1);
        String id = URLDecoder.decode(parts[0], StandardCharsets.UTF_8);
        if (parts.length == 1) {
            return method.equals(HttpMethod.DELETE) ? result(inPoolOf(id, d -> d.delete(id)), "deleted")
                    : notAllowed("DELETE /admin/workers/{id}");
        }
        if (parts.length == 2 && parts[1].equals("drain")) {
            return method.equals(HttpMethod.POST) ? result(inPoolOf(id, d -> d.drain(id)), "draining")
                    : notAllowed("POST /admin/workers/{id}/drain");
        }
        return error(404, "invalid_request_error", "not_found", "no route for " + path.replace("\"", ""));
    }

    private Reply add(byte[] body) {
        JsonNode req;
        try {
            req = JSON.readTree(body);
        } catch (IOException e) {
            return error(400, "invalid_request_error", "invalid_json", "the body is not JSON");
        }
        if (req == null || !req.isObject()) {
            return error(400, "invalid_request_error", "invalid_json", "expected a JSON object {pool, role, url, "
                    + "bootstrap_port}");
        }
        String pool = req.path("pool").asText(defaultPool);
        java.util.Map<String, WorkerDirectory> serving = directories.get();
        WorkerDirectory directory = serving.get(pool);
        if (directory == null) {
            return error(404, "invalid_request_error", "pool_not_found", "pool: " + pool + " (expected one of: "
                    + String.join(", ", new java.util.TreeSet<>(serving.keySet())) + ")");
        }
        JsonNode role = req.get("role");
        JsonNode url = req.get("url");
        if (role == null || !role.isTextual() || url == null || !url.isTextual()) {
            return error(400, "invalid_request_error", "missing_field", "role and url are required strings");
        }
        JsonNode bp = req.get("bootstrap_port");
        if (bp != null && !bp.isNull() && !bp.isIntegralNumber()) {
            return error(400, "invalid_request_error", "invalid_field", "bootstrap_port: " + bp + " (expected: an "
                    + "integer 1..65535)");
        }
        Integer bootstrap = bp == null || bp.isNull() ? null : bp.asInt();
        return result(directory.add(role.asText(), url.asText(), bootstrap), "added");
    }

    private static Reply result(AdminResult r, String state) {
        if (r.error() != null) {
            log.warn("admin workers call refused status={} reason=\"{}\"", r.status(), r.error());
            String code = r.status() == 404 ? "worker_not_found" : r.status() == 409 ? "conflict" : "invalid_request";
            return error(r.status(), "invalid_request_error", code, r.error());
        }
        ObjectNode o = JsonNodeFactory.instance.objectNode().put("id", r.id()).put("state", state);
        return new Reply(r.status(), o.toString());
    }

    private static Reply notAllowed(String allowed) {
        return error(405, "invalid_request_error", "method_not_allowed", "only " + allowed);
    }

    static Reply error(int status, String type, String code, String message) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.putObject("error").put("message", message).put("type", type).put("code", code);
        return new Reply(status, o.toString());
    }

}
