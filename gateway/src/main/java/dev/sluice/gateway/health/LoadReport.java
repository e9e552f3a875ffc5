package dev.sluice.gateway.health;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerTelemetry.Field;
import java.io.IOException;
import java.util.EnumMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads an SGLang load report: {@code /v1/loads} ({@code {"timestamp", "version", "loads": [...]}})
 * or the deprecated {@code /get_load} (a bare list), one entry per data-parallel rank with
 * {@code num_waiting_reqs}. The waiting requests are summed over the ranks.
 */
final class LoadReport {
    private static final Logger log = LoggerFactory.getLogger(LoadReport.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private LoadReport() {
    }

    /** The numbers in {@code body}; null when it holds none (not JSON, no ranks, no waiting counts). */
    static Map<Field, Double> read(byte[] body, Worker w) {
        try {
            JsonNode root = JSON.readTree(body);
            if (root == null) {
                return null;
            }
            JsonNode ranks = root.isObject() && root.has("loads") ? root.get("loads") : root;
            if (ranks.isObject()) {
                ranks = JSON.createArrayNode().add(ranks);
            }
            double waiting = 0;
            boolean any = false;
            for (JsonNode rank : ranks) {
                if (rank.path("num_waiting_reqs").isNumber()) {
                    waiting += rank.get("num_waiting_reqs").asDouble();
                    any = true;
                }
            }
            if (!any) {
                return null;
            }
            Map<Field, Double> out = new EnumMap<>(Field.class);
            out.put(Field.LOAD_WAITING_REQUESTS, waiting);
            return out;
        } catch (IOException e) {
            log.debug("worker load report unreadable worker={} cause=\"{}\"", w.name(), e.getMessage());
            return null;
        }
    }
}
