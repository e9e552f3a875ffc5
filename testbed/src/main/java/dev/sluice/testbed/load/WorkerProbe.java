package dev.sluice.testbed.load;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads a (simulated) SGLang worker's {@code /metrics} and {@code /sim/stats}. */
final class WorkerProbe {
    static final String KV_FAILED = "sglang:num_transfer_failed_reqs_total";
    static final String ABORTED = "sglang:num_aborted_requests_total";
    private static final Pattern ENGINE = Pattern.compile("engine_type=\"([^\"]*)\"");
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /**
     * One reading. {@code metrics}: every sample summed over its label sets; {@code stats}: the
     * {@code /sim/stats} object, or null when the worker has none (a real SGLang server).
     */
    record Snapshot(URI url, String role, Map<String, Double> metrics, JsonNode stats, String error) {
        double metric(String name) {
            return metrics.getOrDefault(name, 0.0);
        }

        double stat(String field) {
            return stats == null ? 0 : stats.path(field).asDouble(0);
        }

        boolean idle() {
            return error == null && (stats == null || stat("running") + stat("queued") == 0);
        }
    }

    Snapshot read(URI url) {
        try {
            String text = get(url, "/metrics");
            Map<String, Double> metrics = parse(text);
            Matcher m = ENGINE.matcher(text);
            String role = m.find() ? m.group(1) : "unknown";
            JsonNode stats = null;
            try {
                stats = ClientStream.JSON.readTree(get(url, "/sim/stats"));
            } catch (IllegalStateException e) {
                // not a simulator: only the sglang: figures
            }
            return new Snapshot(url, role, metrics, stats, null);
        } catch (Exception e) {
            return new Snapshot(url, "unknown", Map.of(), null, e.toString());
        }
    }

    private String get(URI url, String path) throws Exception {
        HttpResponse<String> res = http.send(HttpRequest.newBuilder(url.resolve(path)).timeout(Duration.ofSeconds(10))
                .GET().build(), HttpResponse.BodyHandlers.ofString());
        if (res.statusCode() != 200) {
            throw new IllegalStateException(url.resolve(path) + " answered " + res.statusCode());
        }
        return res.body();
    }

    /** Prometheus text format: {@code name{labels} value}; samples of one name are summed. */
    static Map<String, Double> parse(String text) {
        Map<String, Double> out = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            line = line.trim();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int brace = line.indexOf('{');
            int space = line.indexOf(' ');
            int nameEnd = brace >= 0 && brace < space ? brace : space;
            int valueStart = line.lastIndexOf(' ');
            if (nameEnd <= 0 || valueStart < nameEnd) {
                continue;
            }
            try {
                double v = Double.parseDouble(line.substring(valueStart + 1));
                out.merge(line.substring(0, nameEnd), v, Double::sum);
            } catch (NumberFormatException e) {
                // a timestamped or odd sample: skip it
            }
        }
        return out;
    }
}
