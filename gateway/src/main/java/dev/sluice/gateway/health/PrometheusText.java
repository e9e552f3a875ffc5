package dev.sluice.gateway.health;

import java.util.HashMap;
import java.util.Map;

/**
 * A small reader of the Prometheus text exposition format: sums each metric's samples over all
 * label sets (SGLang exports one series per tp/pp/dp rank). Enough for telemetry; not a full
 * parser (no exemplars, no escaping subtleties in label values beyond quotes).
 */
final class PrometheusText {
    private PrometheusText() {
    }

    static Map<String, Double> sums(String text) {
        Map<String, Double> out = new HashMap<>();
        for (String raw : text.split("\n")) {
            String line = raw.trim();
            if (line.isEmpty() || line.charAt(0) == '#') {
                continue;
            }
            int brace = line.indexOf('{');
            int space;
            String name;
            if (brace >= 0) {
                name = line.substring(0, brace);
                int close = line.lastIndexOf('}');
                if (close < brace) {
                    continue;
                }
                space = close + 1;
            } else {
                space = line.indexOf(' ');
                if (space < 0) {
                    continue;
                }
                name = line.substring(0, space);
            }
            String[] rest = line.substring(space).trim().split("\\s+");
            if (rest.length == 0 || rest[0].isEmpty()) {
                continue;
            }
            try {
                double v = Double.parseDouble(rest[0]);
                if (!Double.isNaN(v)) {
                    out.merge(name, v, Double::sum);
                }
            } catch (NumberFormatException ignored) {
                // a value we do not understand is skipped, not fatal
            }
        }
        return out;
    }
}
