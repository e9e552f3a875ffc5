package dev.sluice.gateway.observability;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** Every PromQL expression shipped in the dashboard and the alert rules, ready to send to Prometheus. */
final class ShippedQueries {
    static final ObjectMapper JSON = new ObjectMapper();
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    /**
     * One expression: where it comes from (row and panel, or alert), as written, and as sent.
     *
     * @param row the dashboard row of its panel, or "alerts"
     */
    record Query(String row, String source, String written, String promql) {
        @Override
        public String toString() {
            return row + " / " + source + ": " + promql;
        }
    }

    private ShippedQueries() {
    }

    /** Grafana's template variables replaced the way Grafana would for "All" over a short range. */
    static String substitute(String expr) {
        return expr.replace("${__rate_interval}", "1m").replace("$__rate_interval", "1m")
                .replace("${__interval}", "1m").replace("$__interval", "1m")
                .replace("${__range}", "1m").replace("$__range", "1m")
                .replace("${instance:regex}", ".*").replace("${instance}", ".*").replace("$instance", ".*");
    }

    static JsonNode dashboardJson() throws IOException {
        return JSON.readTree(ShippedFiles.dashboard().toFile());
    }

    static List<Query> dashboard() throws IOException {
        List<Query> out = new ArrayList<>();
        String row = "(no row)";
        for (JsonNode panel : dashboardJson().path("panels")) {
            if (panel.path("type").asText().equals("row")) {
                row = panel.path("title").asText();
                // a collapsed row carries its panels inside it
                for (JsonNode inner : panel.path("panels")) {
                    addTargets(out, row, inner);
                }
                continue;
            }
            addTargets(out, row, panel);
        }
        return out;
    }

    private static void addTargets(List<Query> out, String row, JsonNode panel) {
        for (JsonNode t : panel.path("targets")) {
            String expr = t.path("expr").asText();
            out.add(new Query(row, panel.path("title").asText() + " [" + t.path("refId").asText() + "]", expr,
                    substitute(expr)));
        }
    }

    static List<Query> alerts() throws IOException {
        List<Query> out = new ArrayList<>();
        for (JsonNode group : YAML.readTree(ShippedFiles.alerts().toFile()).path("groups")) {
            for (JsonNode rule : group.path("rules")) {
                String name = rule.has("alert") ? rule.path("alert").asText() : rule.path("record").asText();
                String expr = rule.path("expr").asText().strip();
                out.add(new Query("alerts", name, expr, expr));
            }
        }
        return out;
    }
}
