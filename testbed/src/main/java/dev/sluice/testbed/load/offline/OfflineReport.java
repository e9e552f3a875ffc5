package dev.sluice.testbed.load.offline;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.testbed.load.offline.OfflineSchedule.Block;
import dev.sluice.testbed.load.offline.OfflineSchedule.Slot;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The offline schedule as JSON ({@code testbed offline --json}) and as a short summary:
 * {@code good}, {@code good_by_class} (the classes of one best schedule found: the objective is the
 * total, not each class), {@code method}, {@code upper_bound}, the {@code schedule}, the
 * {@code model}, and, when the load report has it, the run's own good count as a ratio to both.
 */
public final class OfflineReport {
    /** Key of requests without a class. */
    public static final String NO_CLASS = "none";
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private OfflineReport() {
    }

    public static ObjectNode toJson(OfflineSchedule s, List<OfflineJob> jobs, OfflineModel model, JsonNode report) {
        ObjectNode o = F.objectNode();
        o.put("label", report.path("label").asText(null));
        o.put("requests", jobs.size());
        o.put("good", s.good());
        o.set("good_by_class", counts(s.slots().stream().map(Slot::job).toList()));
        o.set("requests_by_class", counts(jobs));
        o.put("method", s.method().label());
        o.put("optimal", s.optimal());
        o.put("upper_bound", s.upperBound());
        JsonNode runGood = report.at("/goodput/good_requests");
        if (runGood.isNumber()) {
            ObjectNode run = o.putObject("run");
            run.put("good_requests", runGood.asInt());
            run.put("ratio_to_offline", s.good() == 0 ? null : round(runGood.asDouble() / s.good()));
            run.put("ratio_to_upper_bound", s.upperBound() == 0 ? null : round(runGood.asDouble() / s.upperBound()));
        }
        var blocks = o.putArray("blocks");
        for (Block b : s.blocks()) {
            ObjectNode bo = blocks.addObject();
            bo.put("first_send_ms", round(b.firstReleaseMs()));
            bo.put("requests", b.jobs());
            bo.put("good", b.good());
            bo.put("upper_bound", b.upperBound());
            bo.put("method", b.method().label());
            bo.put("detail", b.detail());
        }
        var schedule = o.putArray("schedule");
        for (Slot slot : s.slots()) {
            ObjectNode so = schedule.addObject();
            so.put("index", slot.job().index());
            so.put("class", slot.job().requestClass());
            so.put("send_ms", round(slot.job().releaseMs()));
            so.put("start_ms", round(slot.startMs()));
            so.put("first_token_ms", round(slot.startMs() + slot.job().prefillMs() + model.overheadMs()));
        }
        ObjectNode m = o.putObject("model");
        m.put("prefill_tokens_per_second", model.prefillTokensPerSecond());
        m.put("overhead_ms", round(model.overheadMs()));
        m.put("overhead_source", model.overheadSource());
        m.put("decode_step_ms", model.decodeStepMs());
        JsonNode config = report.path("config");
        for (String key : List.of("slo_ttft_ms", "slo_tpot_ms", "slo_e2e_ms", "client_timeout_ms", "max_tokens",
                "prompt_tokens")) {
            m.set(key, config.path(key).isMissingNode() ? F.nullNode() : config.get(key));
        }
        m.put("on_time", "prefill starts at or after send, one at a time, and send + min(slo_ttft, patience, "
                + "slo_e2e - (max_tokens - 1) * decode_step) >= start + prompt_tokens / rate + overhead");
        m.put("not_modelled", "decode capacity (not the bottleneck here), prefix-cache hits, slowdowns");
        return o;
    }

    public static String summary(OfflineSchedule s, List<OfflineJob> jobs, OfflineModel model, JsonNode report) {
        StringBuilder b = new StringBuilder();
        String label = report.path("label").asText("");
        b.append(String.format(Locale.ROOT, "offline best schedule%s: %d of %d requests meet their SLOs%n",
                label.isEmpty() ? "" : " for \"" + label + "\"", s.good(), jobs.size()));
        b.append(String.format(Locale.ROOT, "  method: %s (%s); upper bound %d%n", s.method().label(),
                s.optimal() ? "optimal" : "not proved optimal: the optimum is between " + s.good() + " and "
                        + s.upperBound(), s.upperBound()));
        Map<String, Integer> good = countMap(s.slots().stream().map(Slot::job).toList());
        StringBuilder classes = new StringBuilder();
        countMap(jobs).forEach((k, v) -> classes.append(classes.length() == 0 ? "" : ", ").append(k).append(' ')
                .append(good.getOrDefault(k, 0)).append('/').append(v));
        b.append("  by class: ").append(classes).append(System.lineSeparator());
        JsonNode runGood = report.at("/goodput/good_requests");
        if (runGood.isNumber() && s.good() > 0) {
            b.append(String.format(Locale.ROOT, "  this run: %d good = %.1f%% of the offline schedule%s%n",
                    runGood.asInt(), 100.0 * runGood.asInt() / s.good(), s.optimal() ? "" : String.format(
                            Locale.ROOT, " (>= %.1f%% of the bound)", 100.0 * runGood.asInt() / s.upperBound())));
        }
        b.append(String.format(Locale.ROOT, "  model: prefill %.0f tokens/s, overhead %.1f ms (%s), decode step %.1f ms%n",
                model.prefillTokensPerSecond(), model.overheadMs(), model.overheadSource(), model.decodeStepMs()));
        return b.toString();
    }

    private static ObjectNode counts(List<OfflineJob> jobs) {
        ObjectNode o = F.objectNode();
        countMap(jobs).forEach(o::put);
        return o;
    }

    private static Map<String, Integer> countMap(List<OfflineJob> jobs) {
        Map<String, Integer> m = new TreeMap<>();
        for (OfflineJob j : jobs) {
            m.merge(j.requestClass() == null ? NO_CLASS : j.requestClass(), 1, Integer::sum);
        }
        return m;
    }

    private static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }
}
