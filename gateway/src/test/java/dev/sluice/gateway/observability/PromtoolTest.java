package dev.sluice.gateway.observability;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.observability.PrometheusBinaries.Result;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * promtool over what Sluice ships and serves: the alert rules (syntax and their unit tests in
 * observability/alerts_test.yml), the scrape config, and the lint of the gateway's /metrics.
 */
@DisabledIfSystemProperty(named = PrometheusBinaries.SKIP_PROPERTY, matches = "true",
        disabledReason = "-Dsluice.skipPrometheus=true: skipped; without it these tests need /usr/bin/prometheus"
                + " and /usr/bin/promtool, which `bash .ci/run` installs")
class PromtoolTest {
    private static Path promtool;
    @TempDir
    Path dir;

    @BeforeAll
    static void requirePromtool() {
        promtool = PrometheusBinaries.require("promtool");
    }

    private Result promtool(byte[] stdin, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(promtool.toString()));
        cmd.addAll(List.of(args));
        return PrometheusBinaries.run(dir, stdin, cmd.toArray(String[]::new));
    }

    @Test
    void theAlertRulesPassCheckRules() throws Exception {
        Result r = promtool(null, "check", "rules", ShippedFiles.alerts().toString());
        assertThat(r.exitCode()).as(r.output()).isZero();
        assertThat(r.output()).contains("SUCCESS");
    }

    @Test
    void theShippedScrapeConfigPassesCheckConfig() throws Exception {
        // the shipped file names its rule file relatively: promtool resolves it beside the config
        Result r = promtool(null, "check", "config", ShippedFiles.prometheusConfig().toString());
        assertThat(r.exitCode()).as(r.output()).isZero();
        assertThat(r.output()).contains("SUCCESS: 1 rule files found");
    }

    @Test
    void theAlertsFireWhenAndOnlyWhenTheirUnitTestsSay() throws Exception {
        // annotations are templated prose, checked below; the unit tests compare labels only
        ObjectNode rules = (ObjectNode) ShippedQueries.YAML.readTree(ShippedFiles.alerts().toFile());
        for (JsonNode group : rules.path("groups")) {
            for (JsonNode rule : group.path("rules")) {
                ((ObjectNode) rule).remove("annotations");
            }
        }
        ShippedQueries.YAML.writeValue(dir.resolve("alerts.yml").toFile(), rules);
        try (InputStream in = PromtoolTest.class.getResourceAsStream("/observability/alerts_test.yml")) {
            Files.write(dir.resolve("alerts_test.yml"), in.readAllBytes());
        }
        Result r = promtool(null, "test", "rules", dir.resolve("alerts_test.yml").toString());
        assertThat(r.exitCode()).as(r.output()).isZero();

        // every alert has at least one case where it fires
        String tests = Files.readString(dir.resolve("alerts_test.yml"));
        for (ShippedQueries.Query alert : ShippedQueries.alerts()) {
            assertThat(tests).as("alerts_test.yml tests %s", alert.source()).contains("alertname: " + alert.source());
        }
    }

    @Test
    void everyAlertHasForSeveritySummaryDescriptionAndARunbookSectionThatExists() throws Exception {
        Set<String> anchors = markdownAnchors(Files.readString(ShippedFiles.operationsDoc()));
        List<String> problems = new ArrayList<>();
        for (JsonNode group : ShippedQueries.YAML.readTree(ShippedFiles.alerts().toFile()).path("groups")) {
            for (JsonNode rule : group.path("rules")) {
                String name = rule.path("alert").asText();
                if (!rule.hasNonNull("for")) {
                    problems.add(name + ": no for:");
                }
                if (!Set.of("critical", "warning").contains(rule.path("labels").path("severity").asText())) {
                    problems.add(name + ": severity label not critical/warning");
                }
                JsonNode a = rule.path("annotations");
                if (a.path("summary").asText().isBlank() || a.path("description").asText().isBlank()) {
                    problems.add(name + ": summary or description missing");
                }
                String runbook = a.path("runbook_url").asText();
                if (!runbook.startsWith("docs/operations.md#")) {
                    problems.add(name + ": runbook_url " + runbook + " is not a docs/operations.md section");
                } else if (!anchors.contains(runbook.substring(runbook.indexOf('#') + 1))) {
                    problems.add(name + ": runbook_url " + runbook + " names no heading of docs/operations.md "
                            + "(headings: " + anchors + ")");
                }
            }
        }
        assertThat(problems).isEmpty();
    }

    /** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes. */
    static Set<String> markdownAnchors(String markdown) {
        Matcher m = Pattern.compile("(?m)^#{1,6}\\s+(.+?)\\s*$").matcher(markdown);
        List<String> out = new ArrayList<>();
        while (m.find()) {
            out.add(m.group(1).toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-'));
        }
        return out.stream().collect(Collectors.toSet());
    }

    @Test
    void theGatewaysMetricsPassPromtoolLint() throws Exception {
        String metrics;
        try (PdTestbed bed = PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(1))
                        .withDefaultMaxTokens(4), "{connect: 2s, first_token: 30s, idle_stream: 10s}",
                "admission: { max_request_tokens: 1000 }\n")) {
            // every meter that only appears once something happened: a success, a rejection, a worker error
            assertThat(bed.post("/generate", "{\"text\":\"hello\"}").statusCode()).isEqualTo(200);
            assertThat(bed.post("/v1/chat/completions", "{\"model\":\"sim-model\",\"stream\":true,"
                    + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}").statusCode()).isEqualTo(200);
            assertThat(bed.post("/generate", "{\"text\":\"" + "abc ".repeat(2000) + "\"}").statusCode()).isEqualTo(413);
            bed.prefill().faults().setFailStatus(500);
            try {
                assertThat(bed.post("/generate", "{\"text\":\"fails\"}").statusCode()).isEqualTo(500);
            } finally {
                bed.prefill().faults().reset();
            }
            bed.assertQuiescent();
            metrics = bed.metrics();
        }
        assertThat(metrics).contains("sluice_requests_total", "sluice_rejections_total");
        Result r = promtool(metrics.getBytes(StandardCharsets.UTF_8), "check", "metrics");
        assertThat(r.exitCode()).as("promtool check metrics on the gateway's /metrics reports:%n%s", r.output())
                .isZero();
    }
}
