package dev.sluice.testbed.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code sluice-testbed compare A.json B.json ... [--offline best.json]}: the headline figures of load
 * reports side by side, then the goodput of the run through Sluice over the unprotected one (and,
 * per client class, over each), and over the offline best schedule when given.
 */
@Command(name = "compare", mixinStandardHelpOptions = true,
        description = "Print the headline figures of load reports (load --json) side by side, then the goodput "
                + "ratio of the run through Sluice (target gateway) to the unprotected one (target direct).")
public final class CompareCommand implements Callable<Integer> {
    @Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Parameters(arity = "1..*", description = "JSON reports written by load --json")
    List<File> files;

    @picocli.CommandLine.Option(names = "--offline",
            description = "JSON written by testbed offline --json ({\"good\": N, \"method\": ..., \"upper_bound\": "
                    + "M|null}): the best schedule with full knowledge of the arrivals; prints each run's goodput "
                    + "as a share of it.")
    File offline;

    private record Row(String name, Function<JsonNode, String> value) {
    }

    private static final List<Row> ROWS = List.of(
            new Row("requests sent", r -> r.at("/counts/sent").asText()),
            new Row("streamed / router", r -> r.at("/config/stream").asText("true") + " / "
                    + (r.at("/config/router").isTextual() ? r.at("/config/router").asText() : r.path("target").asText())),
            new Row("goodput (req/s)", r -> fmt("%.3f", r.at("/goodput/requests_per_s").asDouble())),
            new Row("requests meeting the SLOs", r -> r.at("/goodput/good_requests").asText()),
            new Row("completed", r -> r.at("/counts/completed").asText()),
            new Row("TTFT p50 / p99 (s, completed)", r -> sec(r.at("/latency_ms/ttft/p50")) + " / "
                    + sec(r.at("/latency_ms/ttft/p99"))),
            new Row("rejected, by code", r -> r.at("/counts/rejected").asText() + " "
                    + paren(map(r.path("rejected_by_code")))),
            new Row("rejection latency p50 / p99 (ms)", r -> ms(r.at("/rejection_latency_ms/p50")) + " / "
                    + ms(r.at("/rejection_latency_ms/p99"))),
            new Row("requests meeting the SLOs, by class", r -> byClass(r.path("by_class"))),
            new Row("rejected after waiting > 1 s (max wait s)", r -> r.at("/rejected_after_wait/count").asText("-")
                    + " (" + sec(r.at("/rejected_after_wait/max_wait_ms")) + ")"),
            new Row("gave up (client timeout)", r -> r.at("/counts/gave_up").asText()),
            new Row("failed, by kind", r -> r.at("/counts/failed").asText() + " " + paren(map(r.path("failed_by_kind")))),
            new Row("KV transfer failures (workers)", r -> r.at("/workers/kv_transfer_failures").asText()),
            new Row("requests worked on for a departed client", r -> r.at("/workers/work_for_departed_clients").asText()),
            new Row("GPU-seconds for departed clients", r -> fmt("%.2f", r.at("/workers/departed_client_work_seconds")
                    .asDouble())),
            new Row("run duration (s)", r -> fmt("%.1f", r.path("duration_s").asDouble())));

    @Override
    public Integer call() throws Exception {
        ObjectMapper json = new ObjectMapper();
        List<JsonNode> reports = new ArrayList<>();
        for (File f : files) {
            reports.add(json.readTree(f));
        }
        PrintWriter out = spec.commandLine().getOut();
        StringBuilder header = new StringBuilder(String.format(Locale.ROOT, "| %-42s |", ""));
        StringBuilder rule = new StringBuilder("|" + "-".repeat(44) + "|");
        for (JsonNode r : reports) {
            header.append(String.format(Locale.ROOT, " %-34s |", r.path("label").asText()));
            rule.append("-".repeat(36)).append('|');
        }
        out.println(header);
        out.println(rule);
        for (Row row : ROWS) {
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "| %-42s |", row.name()));
            for (JsonNode r : reports) {
                line.append(String.format(Locale.ROOT, " %-34s |", row.value().apply(r)));
            }
            out.println(line);
        }
        ratios(reports, out);
        if (offline != null) {
            JsonNode best = json.readTree(offline);
            long good = best.path("good").asLong();
            out.printf(Locale.ROOT, "offline best schedule (%s): %d requests meeting the SLOs%s%n",
                    best.path("method").asText("?"), good, best.path("upper_bound").isNumber()
                            ? ", upper bound " + best.path("upper_bound").asLong() : "");
            for (JsonNode r : reports) {
                long g = r.at("/goodput/good_requests").asLong();
                out.printf(Locale.ROOT, "  %-34s %d / %d = %s of the offline best%n", r.path("label").asText(), g, good,
                        good == 0 ? "-" : fmt("%.2f", (double) g / good));
            }
        }
        out.flush();
        return 0;
    }

    /** Sluice (target gateway) over the unprotected router (target direct), overall and per class. */
    private static void ratios(List<JsonNode> reports, PrintWriter out) {
        JsonNode sluice = reports.stream().filter(r -> "gateway".equals(r.path("target").asText())).findFirst()
                .orElse(null);
        JsonNode direct = reports.stream().filter(r -> "direct".equals(r.path("target").asText())).findFirst()
                .orElse(null);
        if (sluice == null || direct == null) {
            return;
        }
        out.println(ratio("goodput Sluice / unprotected", sluice.at("/goodput/good_requests").asLong(),
                direct.at("/goodput/good_requests").asLong()));
        sluice.path("by_class").fieldNames().forEachRemaining(name -> out.println(ratio("  class " + name,
                sluice.path("by_class").path(name).path("good_requests").asLong(),
                direct.path("by_class").path(name).path("good_requests").asLong())));
    }

    private static String ratio(String what, long a, long b) {
        return String.format(Locale.ROOT, "%-32s %d / %d = %s", what, a, b, b == 0 ? (a == 0 ? "-" : "inf")
                : fmt("%.2f", (double) a / b));
    }

    private static String byClass(JsonNode byClass) {
        if (byClass == null || byClass.isMissingNode() || byClass.isEmpty()) {
            return "-";
        }
        StringBuilder b = new StringBuilder();
        byClass.fields().forEachRemaining(e -> b.append(b.length() == 0 ? "" : ", ").append(e.getKey()).append(' ')
                .append(e.getValue().path("good_requests").asText()).append('/').append(e.getValue().path("sent").asText()));
        return b.toString();
    }

    private static String fmt(String f, double v) {
        return String.format(Locale.ROOT, f, v);
    }

    private static String sec(JsonNode ms) {
        return ms == null || ms.isNull() || ms.isMissingNode() ? "-" : fmt("%.1f", ms.asDouble() / 1000);
    }

    private static String ms(JsonNode v) {
        return v == null || v.isNull() || v.isMissingNode() ? "-" : fmt("%.1f", v.asDouble());
    }

    private static String paren(String s) {
        return s.equals("none") ? "" : "(" + s + ")";
    }

    private static String map(JsonNode o) {
        return o == null || o.isEmpty() ? "none" : joined(o);
    }

    private static String joined(JsonNode o) {
        StringBuilder b = new StringBuilder();
        o.fields().forEachRemaining(e -> b.append(b.length() == 0 ? "" : ", ").append(e.getKey()).append(' ')
                .append(e.getValue().asText()));
        return b.toString();
    }
}
