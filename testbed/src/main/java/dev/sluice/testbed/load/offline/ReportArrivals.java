package dev.sluice.testbed.load.offline;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalDouble;

/**
 * The arrivals of a load report ({@code load --json}): per request {@code index}, {@code send_ms}
 * (ms since the run's first send; required), {@code prompt_tokens}, {@code class},
 * {@code patience_ms}, {@code slo_ttft_ms}, {@code slo_e2e_ms}, {@code max_tokens}; any of the
 * others missing falls back to the report's {@code config} ({@code prompt_tokens}, the nominal
 * size; {@code client_timeout_ms}; {@code slo_ttft_ms}; {@code slo_e2e_ms}; {@code max_tokens}).
 */
public final class ReportArrivals {
    private ReportArrivals() {
    }

    /** One request as sent; null limits are absent. */
    public record Arrival(int index, String requestClass, double sendMs, long promptTokens, Double patienceMs,
                          Double sloTtftMs, Double sloE2eMs, int maxTokens) {
    }

    public static List<Arrival> read(JsonNode report) {
        Objects.requireNonNull(report, "report");
        JsonNode requests = report.path("requests");
        if (!requests.isArray()) {
            throw new IllegalArgumentException("requests: missing (expected: the array a load report writes)");
        }
        JsonNode config = report.path("config");
        List<Arrival> out = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            JsonNode r = requests.get(i);
            int index = r.path("index").isNumber() ? r.get("index").asInt() : i;
            JsonNode send = r.path("send_ms");
            if (!send.isNumber()) {
                throw new IllegalArgumentException("requests[" + i + "].send_ms: missing (expected: the request's"
                        + " send time, ms since the first send; this report was written without send times)");
            }
            Double tokens = number(r, config, "prompt_tokens", "prompt_tokens");
            if (tokens == null || tokens < 0) {
                throw new IllegalArgumentException("requests[" + i + "].prompt_tokens: " + tokens
                        + " (expected: >= 0, here or in config.prompt_tokens)");
            }
            Double maxTokens = number(r, config, "max_tokens", "max_tokens");
            JsonNode cls = r.path("class");
            out.add(new Arrival(index, cls.isTextual() ? cls.asText() : null, send.asDouble(), Math.round(tokens),
                    number(r, config, "patience_ms", "client_timeout_ms"), number(r, config, "slo_ttft_ms", "slo_ttft_ms"),
                    number(r, config, "slo_e2e_ms", "slo_e2e_ms"), maxTokens == null ? 1 : Math.max(1,
                    maxTokens.intValue())));
        }
        return out;
    }

    /**
     * The jobs of these arrivals under {@code model}: each must finish its prefill by
     * send + min(SLO TTFT, patience, SLO E2E − (max_tokens − 1) × decode step) − overhead. A TPOT
     * objective below the decode step makes every request with more than one token late.
     */
    public static List<OfflineJob> jobs(List<Arrival> arrivals, OfflineModel model, Double sloTpotMs) {
        List<OfflineJob> out = new ArrayList<>();
        for (Arrival a : arrivals) {
            double firstTokenWithin = Double.POSITIVE_INFINITY;
            if (a.sloTtftMs() != null) {
                firstTokenWithin = Math.min(firstTokenWithin, a.sloTtftMs());
            }
            if (a.patienceMs() != null) {
                firstTokenWithin = Math.min(firstTokenWithin, a.patienceMs());
            }
            double decodeRest = (a.maxTokens() - 1) * model.decodeStepMs();
            if (a.sloE2eMs() != null) {
                firstTokenWithin = Math.min(firstTokenWithin, a.sloE2eMs() - decodeRest);
            }
            if (sloTpotMs != null && a.maxTokens() > 1 && model.decodeStepMs() > sloTpotMs) {
                firstTokenWithin = Double.NEGATIVE_INFINITY;
            }
            out.add(new OfflineJob(a.index(), a.requestClass(), a.sendMs(), model.prefillMs(a.promptTokens()),
                    a.sendMs() + firstTokenWithin - model.overheadMs()));
        }
        return out;
    }

    /**
     * The fixed overhead a run shows: the smallest TTFT minus prefill time over its requests with a
     * TTFT and their own {@code prompt_tokens} (the nominal size is ±10% off, too coarse). It is the
     * overhead plus that request's queueing, so an overestimate unless the request found the prefill
     * idle, which the first request of a run does. Empty when no request qualifies.
     */
    public static OptionalDouble estimateOverheadMs(JsonNode report, double prefillTokensPerSecond) {
        double min = Double.POSITIVE_INFINITY;
        for (JsonNode r : report.path("requests")) {
            if (r.path("ttft_ms").isNumber() && r.path("prompt_tokens").isNumber()) {
                min = Math.min(min, r.get("ttft_ms").asDouble()
                        - r.get("prompt_tokens").asDouble() * 1000.0 / prefillTokensPerSecond);
            }
        }
        return min == Double.POSITIVE_INFINITY ? OptionalDouble.empty() : OptionalDouble.of(Math.max(0, min));
    }

    private static Double number(JsonNode request, JsonNode config, String field, String configField) {
        JsonNode v = request.path(field);
        if (v.isNumber()) {
            return v.asDouble();
        }
        JsonNode c = config.path(configField);
        return c.isNumber() ? c.asDouble() : null;
    }
}
