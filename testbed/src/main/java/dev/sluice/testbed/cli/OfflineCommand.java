package dev.sluice.testbed.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.testbed.load.offline.OfflineJob;
import dev.sluice.testbed.load.offline.OfflineModel;
import dev.sluice.testbed.load.offline.OfflineReport;
import dev.sluice.testbed.load.offline.OfflineSchedule;
import dev.sluice.testbed.load.offline.OfflineScheduler;
import dev.sluice.testbed.load.offline.ReportArrivals;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import java.util.OptionalDouble;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code sluice-testbed offline --report run.json ...}: the best prefill schedule of a run's
 * arrivals found with full knowledge, the denominator of the overload benchmark's goodput ratio.
 */
@Command(name = "offline", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"The most requests of a load report (load --json) that one prefill server could have served "
                + "within their SLOs, scheduled offline with full knowledge of the arrivals (any order, any drops).",
                "Exact (or optimal by argument) when it says so, else the best found and an upper bound."})
public final class OfflineCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--report", required = true, description = "JSON report written by load --json.")
    File report;

    @Option(names = "--prefill-tokens-per-second", required = true,
            description = "Prefill rate of the one prefill server (the benchmark: 2500).")
    double tokensPerSecond;

    @Option(names = "--overhead-ms", description = "Fixed time from prefill done to first token at the client "
            + "(default: estimated from the TTFTs of --overhead-from, else of --report; 50 if none has any).")
    Double overheadMs;

    @Option(names = "--overhead-from", description = "Report to estimate the overhead from (best: the direct run's).")
    File overheadFrom;

    @Option(names = "--decode-step-ms", defaultValue = "20", description = "Time per output token after the first "
            + "(default: ${DEFAULT-VALUE}).")
    double decodeStepMs;

    @Option(names = "--node-budget", defaultValue = "" + OfflineScheduler.DEFAULT_NODE_BUDGET,
            description = "Branch-and-bound nodes per block before settling for the best found (default: ${DEFAULT-VALUE}).")
    long nodeBudget;

    @Option(names = "--json", description = "Write the schedule as JSON here.")
    File json;

    @Override
    public Integer call() throws IOException {
        if (!(tokensPerSecond > 0)) {
            throw new ParameterException(spec.commandLine(), "--prefill-tokens-per-second: " + tokensPerSecond
                    + " (expected: > 0)");
        }
        if (overheadMs != null && !(overheadMs >= 0)) {
            throw new ParameterException(spec.commandLine(), "--overhead-ms: " + overheadMs + " (expected: >= 0)");
        }
        if (!(decodeStepMs >= 0)) {
            throw new ParameterException(spec.commandLine(), "--decode-step-ms: " + decodeStepMs + " (expected: >= 0)");
        }
        if (nodeBudget < 1) {
            throw new ParameterException(spec.commandLine(), "--node-budget: " + nodeBudget + " (expected: >= 1)");
        }
        ObjectMapper mapper = new ObjectMapper();
        JsonNode run = mapper.readTree(report);
        List<ReportArrivals.Arrival> arrivals;
        try {
            arrivals = ReportArrivals.read(run);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), report + ": " + e.getMessage());
        }
        OfflineModel model = new OfflineModel(tokensPerSecond, overhead(mapper, run), overheadSource(), decodeStepMs);
        JsonNode tpot = run.at("/config/slo_tpot_ms");
        List<OfflineJob> jobs = ReportArrivals.jobs(arrivals, model, tpot.isNumber() ? tpot.asDouble() : null);
        OfflineSchedule schedule = OfflineScheduler.schedule(jobs, nodeBudget);
        PrintWriter out = spec.commandLine().getOut();
        out.print(OfflineReport.summary(schedule, jobs, model, run));
        if (json != null) {
            mapper.writerWithDefaultPrettyPrinter().writeValue(json, OfflineReport.toJson(schedule, jobs, model, run));
            out.println("  JSON: " + json);
        }
        out.flush();
        return 0;
    }

    private String source;

    private double overhead(ObjectMapper mapper, JsonNode run) throws IOException {
        if (overheadMs != null) {
            source = "--overhead-ms";
            return overheadMs;
        }
        File from = overheadFrom != null ? overheadFrom : report;
        JsonNode r = overheadFrom != null ? mapper.readTree(overheadFrom) : run;
        OptionalDouble estimate = ReportArrivals.estimateOverheadMs(r, tokensPerSecond);
        if (estimate.isPresent()) {
            source = String.format(Locale.ROOT, "estimated: smallest TTFT minus prefill time in %s", from.getName());
            return estimate.getAsDouble();
        }
        source = "default: no TTFT with its own prompt_tokens in " + from.getName();
        return 50;
    }

    private String overheadSource() {
        return source;
    }
}
