package dev.sluice.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Iterator;
import java.util.Map;

/** Renders {@code /admin/state} as a fixed-width terminal screen. */
final class StatusView {
    private static final int BAR = 30;

    private StatusView() {
    }

    static String render(JsonNode s, String source) {
        StringBuilder b = new StringBuilder();
        b.append(String.format("Sluice  %s  %s  %s%s%n%n", source, s.path("time").asText(),
                s.path("ready").asBoolean() ? "ready" : "NOT READY", s.path("draining").asBoolean() ? "  DRAINING" : ""));
        JsonNode pools = s.path("pools");
        if (configured(pools)) {
            // with pools: the fleet line (every pool's coordination shares it), then a section per pool
            b.append(String.format("live     %d requests%n", s.path("live_requests").asLong()));
            FleetStatusView.render(s.path("coordination"), b);
            for (JsonNode p : pools) {
                b.append(String.format("%npool %s%s  models %s  %s  %s%n", p.path("name").asText(),
                        p.path("default").asBoolean() ? " (default)" : "", join(p.path("models")),
                        p.path("disaggregation").asText(), p.path("ready").asBoolean() ? "ready"
                                : "NOT READY: " + p.path("readiness").asText("?")));
                budget(p, b);
                b.append("\n");
                workers(p, b);
            }
        } else {
            budget(s, b);
            FleetStatusView.render(s.path("coordination"), b);
            b.append("\n");
            workers(s, b);
        }
        JsonNode errors = s.path("recent_errors");
        b.append(String.format("%nrecent errors (%d)%n", errors.size()));
        int shown = 0;
        for (JsonNode e : errors) {
            if (shown++ == 8) {
                break;
            }
            b.append(String.format("  %s %-34s %3d %-16s %s%n", e.path("at").asText(), e.path("rid").asText(),
                    e.path("status").asInt(), e.path("outcome").asText(), truncate(e.path("detail").asText(), 80)));
        }
        return b.toString();
    }

    /** Queue and pending tokens against their limits, the prefill rate, the queued by class: of the gateway or a pool. */
    private static void budget(JsonNode s, StringBuilder b) {
        JsonNode q = s.path("queue");
        JsonNode l = s.path("limits");
        b.append(String.format("queue    %s %d / %d requests%n", bar(q.path("queued").asDouble(),
                l.path("max_queued_requests").asDouble()), q.path("queued").asLong(), l.path("max_queued_requests").asLong()));
        b.append(String.format("pending  %s %d / %d prompt tokens%n", bar(q.path("pending_tokens").asDouble(),
                l.path("max_pending_tokens").asDouble()), q.path("pending_tokens").asLong(),
                l.path("max_pending_tokens").asLong()));
        b.append(String.format("prefill  %d tokens/s (%s)   in prefill %d tokens   dispatched %d%s%n",
                q.path("prefill_tokens_per_second").asLong(), q.path("throughput_measured").asBoolean() ? rateSources(s)
                        : l.path("early_rejection").asBoolean() ? "guess: deadline checks at the in-flight bound"
                        : "guess: deadline checks off", q.path("inflight_prefill_tokens").asLong(),
                q.path("dispatched").asLong(), // live requests are the gateway's, not a pool's
                s.has("live_requests") ? "   live " + s.path("live_requests").asLong() : ""));
        b.append("classes ");
        for (Iterator<Map.Entry<String, JsonNode>> it = q.path("by_class").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> c = it.next();
            b.append(String.format(" %s=%d", c.getKey(), c.getValue().path("queued").asLong()));
            JsonNode tenants = c.getValue().path("tenants");
            if (tenants.size() > 0) {
                b.append(" (").append(tenants.toString().replaceAll("[{}\"]", "").replace(':', '=')).append(')');
            }
        }
        b.append("\n");
    }

    /** The worker table and each worker's notes (misconfigured, suspect, state reason): of the gateway or a pool. */
    private static void workers(JsonNode s, StringBuilder b) {
        b.append(String.format("%-8s %-22s %-10s %-9s %8s %12s %6s %6s %7s %7s %6s%n", "ROLE", "WORKER", "SOURCE",
                "STATE", "INFLIGHT", "WINDOW r/tok", "QUEUE", "RUN", "TOKEN%", "CACHE%", "AGE"));
        for (JsonNode w : s.path("workers")) {
            JsonNode t = w.path("telemetry");
            String state = w.path("state").asText("?");
            b.append(String.format("%-8s %-22s %-10s %-9s %8d %12s %6s %6s %7s %7s %6s%n", w.path("role").asText(),
                    w.path("worker").asText(), w.path("source").asText("file"), state.equals("healthy") ? state : state.toUpperCase(java.util.Locale.ROOT),
                    w.path("inflight").asLong(),
                    w.path("window").path("requests").asLong() + "/" + w.path("window").path("tokens").asLong(),
                    num(t.path("queue_requests"), 1), num(t.path("running_requests"), 1),
                    num(t.path("token_usage"), 100), num(t.path("cache_hit_rate"), 100),
                    t.path("age_seconds").isNull() ? "never" : (t.path("stale").asBoolean() ? "STALE " : "")
                            + t.path("age_seconds").asDouble() + "s"));
        }
        for (JsonNode w : s.path("workers")) {
            for (JsonNode p : w.path("identity").path("problems")) {
                b.append(String.format("  %s %s: MISCONFIGURED: %s%n", w.path("role").asText(), w.path("worker").asText(),
                        truncate(p.asText(), 110)));
            }
            for (JsonNode p : w.path("identity").path("warnings")) {
                b.append(String.format("  %s %s: %s%n", w.path("role").asText(), w.path("worker").asText(),
                        truncate(p.asText(), 110)));
            }
        }
        for (JsonNode w : s.path("workers")) {
            // how its data-parallel ranks are routed, where that is news: per rank, or a vLLM worker kept whole
            JsonNode dp = w.path("dp_ranks");
            String detail = dp.path("detail").asText("");
            if (dp.path("routed").asInt(1) > 1 || detail.contains("vLLM")) {
                b.append(String.format("  %s %s: %s%n", w.path("role").asText(), w.path("worker").asText(),
                        truncate(detail, 110)));
            }
        }
        for (JsonNode w : s.path("workers")) {
            JsonNode probe = w.path("stall_probe");
            if (!probe.isMissingNode()) {
                b.append(String.format("  %s %s: SUSPECT, no client request goes to it; %s (%d failed since the "
                                + "verdict)%n", w.path("role").asText(), w.path("worker").asText(),
                        (probe.path("running").asBoolean() ? "a probe is running (verdict within "
                                + probe.path("verdict_in_ms").asLong() + " ms), the next one" : "next probe")
                                + " in " + probe.path("next_in_ms").asLong() + " ms",
                        probe.path("failed").asInt()));
            }
        }
        for (JsonNode w : s.path("workers")) {
            if (!w.path("state_reason").asText("").isEmpty()) {
                b.append(String.format("  %s %s: %s since %s%n", w.path("role").asText(), w.path("worker").asText(),
                        truncate(w.path("state_reason").asText(), 90), w.path("state_since").asText("start")));
            }
        }
    }

    /**
     * Whether {@code pools:} is configured: {@code /admin/state} lists the one implicit pool too, which
     * names no model (it takes any); then the view stays the one of a gateway without pools.
     */
    private static boolean configured(JsonNode pools) {
        return pools.size() > 1 || (pools.size() == 1 && pools.get(0).path("models").size() > 0);
    }

    private static String join(JsonNode list) {
        java.util.List<String> out = new java.util.ArrayList<>();
        list.forEach(n -> out.add(n.asText()));
        return String.join(",", out);
    }

    /** Where the prefill workers' rates come from: "measured", "configured", "telemetry", "calibrated", "state_file", or a mix. */
    private static String rateSources(JsonNode s) {
        java.util.Set<String> sources = new java.util.TreeSet<>();
        for (JsonNode w : s.path("workers")) {
            if (w.has("prefill_rate")) {
                sources.add(w.path("prefill_rate").path("source").asText());
            }
        }
        return sources.isEmpty() ? "trusted" : String.join("+", sources);
    }

    private static String bar(double value, double limit) {
        int filled = limit <= 0 ? 0 : (int) Math.min(BAR, Math.round(BAR * value / limit));
        return "[" + "#".repeat(filled) + ".".repeat(BAR - filled) + "]";
    }

    private static String num(JsonNode n, double scale) {
        if (n.isMissingNode() || n.isNull()) {
            return "?"; // unknown, not zero
        }
        double v = n.asDouble() * scale;
        return v == Math.rint(v) ? String.valueOf((long) v) : String.format("%.1f", v);
    }

    private static String truncate(String s, int n) {
        return s.length() <= n ? s : s.substring(0, n - 3) + "...";
    }
}
