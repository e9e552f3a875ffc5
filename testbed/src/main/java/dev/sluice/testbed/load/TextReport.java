package dev.sluice.testbed.load;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;

/** The human-readable form of a report (the JSON object of {@link LoadReport}). */
public final class TextReport {
    private TextReport() {
    }

    public static String render(JsonNode r) {
        StringBuilder b = new StringBuilder();
        JsonNode c = r.path("counts");
        line(b, "== load report: %s (target %s, started %s)", r.path("label").asText(), r.path("target").asText(),
                r.path("started_at").asText());
        line(b, "requests     sent %d, completed %d, gave up %d (%d before the first token, %d mid-stream), "
                        + "failed %d, rejected %d", c.path("sent").asLong(), c.path("completed").asLong(),
                c.path("gave_up").asLong(), c.path("gave_up_before_first_token").asLong(),
                c.path("gave_up_mid_stream").asLong(), c.path("failed").asLong(), c.path("rejected").asLong());
        JsonNode gp = r.path("goodput");
        line(b, "duration     %.1f s (first send to last client done)", r.path("duration_s").asDouble());
        line(b, "throughput   %.3f req/s, %.1f output tok/s", r.at("/throughput/requests_per_s").asDouble(),
                r.at("/throughput/output_tokens_per_s").asDouble());
        line(b, "goodput      %.3f req/s (%d requests met the SLOs: %s)", gp.path("requests_per_s").asDouble(),
                gp.path("good_requests").asLong(), slos(gp.path("slo_ms")));
        line(b, "%-12s %10s %10s %10s %10s %10s  (ms, completed requests)", "", "mean", "p50", "p90", "p99", "n");
        for (String k : new String[] {"ttft", "tpot", "itl", "e2e"}) {
            JsonNode s = r.path("latency_ms").path(k);
            line(b, "%-12s %10s %10s %10s %10s %10d", k.toUpperCase(Locale.ROOT), ms(s.get("mean")), ms(s.get("p50")),
                    ms(s.get("p90")), ms(s.get("p99")), s.path("count").asLong());
        }
        JsonNode rl = r.path("rejection_latency_ms");
        line(b, "rejections   by status %s, by code %s; latency p50 %s ms, p99 %s ms; Retry-After %s..%s s",
                map(r.path("rejected_by_status")), map(r.path("rejected_by_code")), ms(rl.get("p50")),
                ms(rl.get("p99")), ms(r.at("/retry_after_s/min")), ms(r.at("/retry_after_s/max")));
        JsonNode waited = r.path("rejected_after_wait");
        if (waited.path("count").asLong() > 0) {
            line(b, "             %d rejections came more than %d ms after their send (longest wait %s ms)",
                    waited.path("count").asLong(), waited.path("threshold_ms").asLong(), ms(waited.get("max_wait_ms")));
        }
        r.path("by_class").fields().forEachRemaining(e -> {
            JsonNode k = e.getValue();
            line(b, "class %-10s sent %d, good %d (TTFT <= %s ms), completed %d, gave up %d, rejected %d, failed %d; "
                            + "TTFT p50 %s ms", e.getKey(), k.path("sent").asLong(), k.path("good_requests").asLong(),
                    ms(k.get("slo_ttft_ms")), k.path("completed").asLong(), k.path("gave_up").asLong(),
                    k.path("rejected").asLong(), k.path("failed").asLong(), ms(k.at("/ttft_ms/p50")));
        });
        line(b, "failures     %s", map(r.path("failed_by_kind")));
        if (r.has("router")) {
            line(b, "router       prefill answers (read and dropped) %s", map(r.at("/router/prefill_answers")));
        }
        JsonNode w = r.path("workers");
        line(b, "workers      KV transfer failures %d, aborted %d, work for departed clients %d, GPU time for "
                        + "departed clients %.2f s (%s after %.1f s)", w.path("kv_transfer_failures").asLong(),
                w.path("aborted_requests").asLong(), w.path("work_for_departed_clients").asLong(),
                w.path("departed_client_work_seconds").asDouble(), w.path("settled").asBoolean() ? "idle" : "NOT idle",
                w.path("settle_s").asDouble());
        for (JsonNode pw : w.path("per_worker")) {
            line(b, "  %-28s %-8s kv_fail %d, aborted %d, departed %d (%.2f s)%s", pw.path("url").asText(),
                    pw.path("role").asText(), pw.path("kv_transfer_failures").asLong(),
                    pw.path("aborted_requests").asLong(), pw.path("work_for_departed_clients").asLong(),
                    pw.path("departed_client_work_seconds").asDouble(),
                    pw.has("error") ? "  ERROR " + pw.get("error").asText() : "");
        }
        JsonNode p = r.path("prefill");
        if (!p.isMissingNode()) {
            JsonNode m = p.path("max_over_mean");
            line(b, "prefill      prefix cache hit rate %s (%d of %d prompt tokens), GPU time %.2f s; busiest worker "
                            + "/ mean: requests %s, prompt tokens %s, GPU time %s", pct(p.get("prefix_cache_hit_rate")),
                    p.path("prefix_cache_hit_tokens").asLong(), p.path("prompt_tokens").asLong(),
                    p.path("gpu_seconds").asDouble(), ratio(m.get("requests")), ratio(m.get("prompt_tokens")),
                    ratio(m.get("gpu_seconds")));
            JsonNode plan = r.path("workload_plan");
            if (!plan.isMissingNode()) {
                line(b, "  the workload's prompts: %d tokens, at most %d (%s) servable from prefix caches",
                        plan.path("prompt_tokens").asLong(), plan.path("cacheable_tokens").asLong(),
                        pct(plan.get("cacheable_share")));
            }
            for (JsonNode pw : p.path("per_worker")) {
                line(b, "  %-28s requests %d, prompt tokens %d, hit rate %s, GPU time %.2f s", pw.path("url").asText(),
                        pw.path("requests").asLong(), pw.path("prompt_tokens").asLong(),
                        pct(pw.get("prefix_cache_hit_rate")), pw.path("gpu_seconds").asDouble());
            }
        }
        return b.toString();
    }

    private static String pct(JsonNode v) {
        return v == null || v.isNull() ? "-" : String.format(Locale.ROOT, "%.1f%%", 100 * v.asDouble());
    }

    private static String ratio(JsonNode v) {
        return v == null || v.isNull() ? "-" : String.format(Locale.ROOT, "%.2fx", v.asDouble());
    }

    static String ms(JsonNode v) {
        return v == null || v.isNull() || v.isMissingNode() ? "-" : String.format(Locale.ROOT, "%.1f", v.asDouble());
    }

    static String map(JsonNode o) {
        if (o == null || o.isEmpty()) {
            return "none";
        }
        StringBuilder b = new StringBuilder();
        for (Iterator<Map.Entry<String, JsonNode>> it = o.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            b.append(b.length() == 0 ? "" : " ").append(e.getKey()).append('=').append(e.getValue().asText());
        }
        return b.toString();
    }

    private static String slos(JsonNode slo) {
        StringBuilder b = new StringBuilder();
        for (String k : new String[] {"ttft", "tpot", "e2e"}) {
            if (slo.hasNonNull(k)) {
                b.append(b.length() == 0 ? "" : ", ").append(k).append(" <= ").append(slo.get(k).asLong()).append(" ms");
            }
        }
        return b.length() == 0 ? "none given" : b.toString();
    }

    private static void line(StringBuilder b, String format, Object... args) {
        b.append(String.format(Locale.ROOT, format, args)).append('\n');
    }
}
