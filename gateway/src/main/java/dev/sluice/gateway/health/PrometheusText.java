package dev.sluice.gateway.health;

import java.util.HashMap;
import java.util.Map;

/**
 * A small reader of the Prometheus text exposition format that keeps, per metric name, the sum,
 * the maximum and the number of its series. A worker exports one series per rank: SGLang one per
 * {@code dp_rank} with DP attention (also labelled {@code tp_rank}, {@code pp_rank}), vLLM one per
 * {@code engine}. Counts add up over ranks; a ratio such as {@code sglang:token_usage} does not
 * (two ranks at 60% are not a cache at 120%): its reader takes the max. Enough for telemetry, not
 * a full parser (no exemplars; label values are skipped, quotes and escapes honoured).
 */
final class PrometheusText {
    /** One metric over all its series. */
    record Aggregate(double sum, double max, int series) {
        Aggregate add(double v) {
            return new Aggregate(sum + v, Math.max(max, v), series + 1);
        }
    }

    /**
     * vLLM's scheduler gauges, one series per engine core it manages ({@code PrometheusStatLogger},
     * labels {@code model_name} and {@code engine}: vllm-project/vllm@005a810bc40faa25b8870fbc8559c3462581eee3
     * vllm/v1/metrics/loggers.py).
     */
    static final String ENGINE_RUNNING = "vllm:num_requests_running";
    static final String ENGINE_WAITING = "vllm:num_requests_waiting";
    /**
     * Metrics whose series are also kept apart by one label, under {@code name{label="value"}}:
     * SGLang's token and GPU-time counters carry what they count in a label (sgl-project/sglang
     * python/sglang/srt/metrics/collector.py, SchedulerMetricsCollector: {@code realtime_tokens_total}
     * by {@code mode}, {@code gpu_execution_seconds_total} by {@code category}).
     */
    private static final Map<String, String> SPLIT_BY = Map.of(
            "sglang:realtime_tokens_total", "mode",
            "sglang:gpu_execution_seconds_total", "category",
            "sglang:num_running_reqs", "dp_rank",
            "sglang:num_queue_reqs", "dp_rank",
            "sglang:num_prefill_bootstrap_queue_reqs", "dp_rank",
            "sglang:num_decode_prealloc_queue_reqs", "dp_rank",
            "sglang:num_decode_transfer_queue_reqs", "dp_rank",
            ENGINE_RUNNING, "engine",
            ENGINE_WAITING, "engine");

    /**
     * The gauges that count a rank's requests, running or waiting wherever its scheduler keeps them
     * (a PD prefill's bootstrap queue, a decode's prealloc and transfer queues), one series per
     * {@code dp_rank} with DP attention (sgl-project/sglang python/sglang/srt/metrics/collector.py).
     */
    static final java.util.List<String> RANK_REQUESTS = java.util.List.of("sglang:num_running_reqs",
            "sglang:num_queue_reqs", "sglang:num_prefill_bootstrap_queue_reqs", "sglang:num_decode_prealloc_queue_reqs",
            "sglang:num_decode_transfer_queue_reqs");

    private static final String ENGINE_KEY = ENGINE_RUNNING + "{engine=\"";

    /**
     * The {@code engine} label values of {@link #ENGINE_RUNNING}, in ascending (numeric) order: a vLLM
     * server's engines as the positions its {@code X-data-parallel-rank} header names. Empty when none.
     */
    static java.util.List<String> engines(Map<String, Aggregate> m) {
        java.util.List<String> out = new java.util.ArrayList<>();
        for (String key : m.keySet()) {
            if (key.startsWith(ENGINE_KEY) && key.endsWith("\"}")) {
                out.add(key.substring(ENGINE_KEY.length(), key.length() - 2));
            }
        }
        out.sort(java.util.Comparator.comparing((String e) -> e.length()).thenComparing(e -> e));
        return out;
    }

    /**
     * Per rank (index), the requests it holds running or waiting: SGLang's {@link #RANK_REQUESTS} per
     * {@code dp_rank}, else vLLM's running and waiting per engine, the engines in {@link #engines} order;
     * empty when no series carries a rank, or a vLLM server shows one engine (it has no ranks to route to).
     */
    static java.util.List<Double> rankRequests(Map<String, Aggregate> m) {
        java.util.List<Double> out = sglangRankRequests(m);
        java.util.List<String> engines = engines(m);
        if (!out.isEmpty() || engines.size() < 2) {
            return out;
        }
        for (String engine : engines) {
            Aggregate waiting = m.get(ENGINE_WAITING + "{engine=\"" + engine + "\"}");
            out.add(m.get(ENGINE_KEY + engine + "\"}").sum() + (waiting == null ? 0 : waiting.sum()));
        }
        return out;
    }

    private static java.util.List<Double> sglangRankRequests(Map<String, Aggregate> m) {
        java.util.List<Double> out = new java.util.ArrayList<>();
        for (int rank = 0; rank < 4096; rank++) {
            double sum = 0;
            boolean any = false;
            for (String name : RANK_REQUESTS) {
                Aggregate a = m.get(name + "{dp_rank=\"" + rank + "\"}");
                if (a != null) {
                    sum += a.sum();
                    any = true;
                }
            }
            if (!any) {
                return out;
            }
            out.add(sum);
        }
        return out;
    }

    /**
     * GPU forward time of prefill passes, summed over the categories that name one. SGLang's label
     * changed across versions: {@code forward} for every pass (sgl-project/sglang@00ae9c15
     * metrics/collector.py), then {@code "forward_" + forward_mode.name.lower()} (sglang@49b0ed23
     * utils/device_timer.py: {@code forward_extend}, {@code forward_decode}, ...), now the mode alone
     * (sglang@00251aaa model_executor graph runners call {@code device_timer_ctx(timer,
     * forward_batch.forward_mode.name.lower())}: {@code extend}, {@code decode}, {@code idle},
     * {@code split_prefill}, ...). Prefill is {@code extend}, {@code mixed}, {@code split_prefill},
     * with or without the prefix, and the old {@code forward} (on a prefill server every pass is one).
     */
    static final String PREFILL_GPU_SECONDS = "sglang:gpu_execution_seconds_total{category=~prefill}";

    static boolean isPrefillCategory(String category) {
        String mode = category.startsWith("forward_") ? category.substring("forward_".length()) : category;
        return mode.equals("forward") || mode.equals("extend") || mode.equals("mixed") || mode.equals("split_prefill");
    }

    private PrometheusText() {
    }

    static Map<String, Aggregate> read(String text) {
        Map<String, Aggregate> out = new HashMap<>();
        int at = 0;
        int length = text.length();
        while (at < length) {
            int end = text.indexOf('\n', at);
            if (end < 0) {
                end = length;
            }
            sample(text.substring(at, end).trim(), out);
            at = end + 1;
        }
        return out;
    }

    private static void sample(String line, Map<String, Aggregate> out) {
        if (line.isEmpty() || line.charAt(0) == '#') {
            return;
        }
        int brace = line.indexOf('{');
        int space = line.indexOf(' ');
        String name;
        int valueStart;
        String split = null;
        boolean prefillSeconds = false;
        if (brace >= 0 && (space < 0 || brace < space)) {
            name = line.substring(0, brace);
            int close = labelsEnd(line, brace + 1);
            if (close < 0) {
                return;
            }
            String label = SPLIT_BY.get(name);
            if (label != null) {
                String value = labelValue(line, brace + 1, close, label);
                split = value == null ? null : name + "{" + label + "=\"" + value + "\"}";
                prefillSeconds = value != null && label.equals("category") && isPrefillCategory(value);
            }
            valueStart = close + 1;
        } else if (space > 0) {
            name = line.substring(0, space);
            valueStart = space;
        } else {
            return;
        }
        String[] rest = line.substring(valueStart).trim().split("\\s+");
        if (rest.length == 0 || rest[0].isEmpty()) {
            return;
        }
        try {
            double v = Double.parseDouble(rest[0]);
            if (!Double.isNaN(v)) {
                out.merge(name, new Aggregate(v, v, 1), (a, b) -> a.add(b.sum()));
                if (split != null) {
                    out.merge(split, new Aggregate(v, v, 1), (a, b) -> a.add(b.sum()));
                }
                if (prefillSeconds) {
                    out.merge(PREFILL_GPU_SECONDS, new Aggregate(v, v, 1), (a, b) -> a.add(b.sum()));
                }
            }
        } catch (NumberFormatException ignored) {
            // a value we do not understand is skipped, not fatal
        }
    }

    /** The value of {@code label} in the label set {@code line[from, to)}, unescaped; null if absent. */
    static String labelValue(String line, int from, int to, String label) {
        int i = from;
        while (i < to) {
            int eq = line.indexOf('=', i);
            if (eq < 0 || eq >= to || eq + 1 >= to || line.charAt(eq + 1) != '"') {
                return null;
            }
            String key = line.substring(i, eq).trim();
            StringBuilder value = new StringBuilder();
            int j = eq + 2;
            for (; j < to && line.charAt(j) != '"'; j++) {
                char c = line.charAt(j);
                if (c == '\\' && j + 1 < to) {
                    c = line.charAt(++j);
                    value.append(c == 'n' ? '\n' : c);
                } else {
                    value.append(c);
                }
            }
            if (key.equals(label)) {
                return value.toString();
            }
            i = j + 1;
            while (i < to && (line.charAt(i) == ',' || line.charAt(i) == ' ')) {
                i++;
            }
        }
        return null;
    }

    /** Index of the '}' closing a label set that starts at {@code from}, or -1; a '}' inside a quoted value is skipped. */
    private static int labelsEnd(String line, int from) {
        boolean quoted = false;
        for (int i = from; i < line.length(); i++) {
            char c = line.charAt(i);
            if (quoted && c == '\\') {
                i++;
            } else if (c == '"') {
                quoted = !quoted;
            } else if (!quoted && c == '}') {
                return i;
            }
        }
        return -1;
    }
}
