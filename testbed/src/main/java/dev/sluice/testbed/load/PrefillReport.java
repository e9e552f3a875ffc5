package dev.sluice.testbed.load;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What the prefill side did over a run, from the simulated workers' {@code /sim/stats} before and
 * after: prefix cache hit tokens over query tokens (SGLang's {@code cache_hit_rate}, over the run
 * instead of the server's life), prefill GPU-seconds ({@code prefillBusySeconds}), and how the work
 * was spread: per worker, and the most loaded worker over the mean, in requests, prompt tokens and
 * GPU-seconds. Workers that prefill (role prefill or unified) and expose {@code /sim/stats} only.
 */
final class PrefillReport {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private PrefillReport() {
    }

    /** Empty when no worker read was a simulated prefill (or unified) server. */
    static Optional<ObjectNode> of(List<WorkerProbe.Snapshot> before, List<WorkerProbe.Snapshot> after) {
        List<double[]> rows = new ArrayList<>();
        ObjectNode o = F.objectNode();
        ArrayNode per = F.arrayNode();
        for (int i = 0; i < after.size(); i++) {
            WorkerProbe.Snapshot b = before.get(i);
            WorkerProbe.Snapshot a = after.get(i);
            boolean prefills = a.role().equals("prefill") || a.role().equals("unified");
            if (!prefills || a.stats() == null || b.stats() == null) {
                continue;
            }
            double requests = delta(a, b, "completed") + delta(a, b, "aborted") + delta(a, b, "failed");
            double query = delta(a, b, "prefixCacheQueryTokens");
            double hit = delta(a, b, "prefixCacheHitTokens");
            double busy = delta(a, b, "prefillBusySeconds");
            rows.add(new double[] {requests, query, hit, busy});
            ObjectNode w = per.addObject();
            w.put("url", a.url().toString());
            w.put("requests", Math.round(requests));
            w.put("prompt_tokens", Math.round(query));
            w.put("prefix_cache_hit_tokens", Math.round(hit));
            Summary.put(w, "prefix_cache_hit_rate", query == 0 ? Double.NaN : hit / query);
            w.put("gpu_seconds", LoadReport.round(busy));
        }
        if (rows.isEmpty()) {
            return Optional.empty();
        }
        double[] sum = new double[4];
        double[] max = new double[4];
        for (double[] r : rows) {
            for (int k = 0; k < 4; k++) {
                sum[k] += r[k];
                max[k] = Math.max(max[k], r[k]);
            }
        }
        int n = rows.size();
        o.put("workers", n);
        o.put("requests", Math.round(sum[0]));
        o.put("prompt_tokens", Math.round(sum[1]));
        o.put("prefix_cache_hit_tokens", Math.round(sum[2]));
        Summary.put(o, "prefix_cache_hit_rate", sum[1] == 0 ? Double.NaN : sum[2] / sum[1]);
        o.put("gpu_seconds", LoadReport.round(sum[3]));
        ObjectNode balance = o.putObject("max_over_mean");
        Summary.put(balance, "requests", maxOverMean(max[0], sum[0], n));
        Summary.put(balance, "prompt_tokens", maxOverMean(max[1], sum[1], n));
        Summary.put(balance, "gpu_seconds", maxOverMean(max[3], sum[3], n));
        o.set("per_worker", per);
        return Optional.of(o);
    }

    /** The largest share over the mean one; NaN when nothing was done. */
    static double maxOverMean(double max, double sum, int n) {
        return sum <= 0 ? Double.NaN : max / (sum / n);
    }

    private static double delta(WorkerProbe.Snapshot a, WorkerProbe.Snapshot b, String field) {
        return a.stat(field) - b.stat(field);
    }
}
