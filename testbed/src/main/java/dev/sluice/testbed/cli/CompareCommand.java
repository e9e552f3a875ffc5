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

/** {@code sluice-testbed compare A.json B.json ...}: the headline figures of load reports side by side. */
@Command(name = "compare", mixinStandardHelpOptions = true,
        description = "Print the headline figures of load reports (load --json) side by side.")
public final class CompareCommand implements Callable<Integer> {
    @Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Parameters(arity = "1..*", description = "JSON reports written by load --json")
    List<File> files;

    private record Row(String name, Function<JsonNode, String> value) {
    }

    private static final List<Row> ROWS = List.of(
            new Row("requests sent", r -> r.at("/counts/sent").asText()),
            new Row("goodput (req/s)", r -> fmt("%.3f", r.at("/goodput/requests_per_s").asDouble())),
            new Row("requests meeting the SLOs", r -> r.at("/goodput/good_requests").asText()),
            new Row("completed", r -> r.at("/counts/completed").asText()),
            new Row("TTFT p50 / p99 (s, completed)", r -> sec(r.at("/latency_ms/ttft/p50")) + " / "
                    + sec(r.at("/latency_ms/ttft/p99"))),
            new Row("rejected, by code", r -> r.at("/counts/rejected").asText() + " "
                    + paren(map(r.path("rejected_by_code")))),
            new Row("rejection latency p50 / p99 (ms)", r -> ms(r.at("/rejection_latency_ms/p50")) + " / "
                    + ms(r.at("/rejection_latency_ms/p99"))),
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
        out.flush();
        return 0;
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
