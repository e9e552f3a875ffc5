package dev.sluice.testbed.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.testbed.cli.DurationConverter;
import dev.sluice.testbed.cli.LoadCommand;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The overload options: validated in LoadSpec (and the CLI) with clear errors, shown in the config JSON. */
class LoadOptionsTest {
    private static final URI GW = URI.create("http://127.0.0.1:1");

    private static LoadSpec spec(LoadSpec.Target target, Duration sloTtft, LoadOptions o) {
        URI w = URI.create("http://127.0.0.1:2");
        return new LoadSpec(target, GW, List.of(w), List.of(3), List.of(w), 10, null, LoadSpec.Arrival.BURST, 10, 0, 1,
                1000, 8, Duration.ofSeconds(30), sloTtft, null, null, 0, "m", List.of(), Duration.ofSeconds(1), "t",
                null, o);
    }

    private static ClientClass cls(String spec) {
        return ClientClass.parse(spec, DurationConverter::parse);
    }

    @Test
    void classesParseAndTheirSharesMustSumToOne() {
        assertThat(cls("interactive:0.3:15s")).isEqualTo(new ClientClass("interactive", 0.3, Duration.ofSeconds(15)));
        assertThatThrownBy(() -> cls("interactive:0.3")).hasMessageContaining("expected: NAME:SHARE:PATIENCE");
        assertThatThrownBy(() -> cls("a:x:1s")).hasMessage("--class a: share 'x' (expected: a number)");
        assertThatThrownBy(() -> cls("a:0.5:soon")).hasMessageContaining("--class a: patience 'soon'");
        assertThatThrownBy(() -> cls("a:0:1s")).hasMessage("--class a: share 0.0 (expected: > 0 and <= 1)");
        assertThatThrownBy(() -> cls("a b:0.5:1s")).hasMessageContaining("--class name: 'a b'");
        assertThatThrownBy(() -> LoadOptions.DEFAULTS.withClasses(List.of(cls("a:0.3:1s"), cls("b:0.6:1s"))))
                .hasMessageContaining("--class shares sum to 0.8999999999999999 (expected: 1");
        assertThatThrownBy(() -> LoadOptions.DEFAULTS.withClasses(List.of(cls("a:0.5:1s"), cls("a:0.5:2s"))))
                .hasMessageContaining("--class a: given twice");
    }

    @Test
    void promptRangeAndTheOptionsThatExcludeEachOther() {
        assertThatThrownBy(() -> LoadOptions.DEFAULTS.withPromptRange(16_000, 1_000))
                .hasMessage("--prompt-tokens-range: 16000-1000 (expected: MIN-MAX with 1 <= MIN <= MAX)");
        LoadOptions classes = LoadOptions.DEFAULTS.withClasses(List.of(cls("a:1:5s")));
        assertThatThrownBy(() -> spec(LoadSpec.Target.DIRECT, Duration.ofSeconds(5), classes))
                .hasMessageContaining("--slo-ttft: with --class each class's patience is its TTFT objective");
        assertThatThrownBy(() -> spec(LoadSpec.Target.GATEWAY, null,
                LoadOptions.DEFAULTS.withRouter(LoadOptions.Router.MINI_LB)))
                .hasMessageContaining("--router applies to --target direct");
        assertThatThrownBy(() -> spec(LoadSpec.Target.DIRECT, null,
                LoadOptions.DEFAULTS.withMetricsUrl(URI.create("http://127.0.0.1:9"))))
                .hasMessageContaining("--metrics-url applies to --target gateway");
        assertThatThrownBy(() -> LoadOptions.Router.parse("nginx"))
                .hasMessage("--router: 'nginx' (expected: sglang-router or mini-lb)");
    }

    @Test
    void theConfigJsonShowsEveryOption() {
        LoadOptions o = LoadOptions.DEFAULTS.withStream(false).withPromptRange(1000, 16000)
                .withClasses(List.of(cls("interactive:0.3:15s"), cls("batch:0.7:60s")))
                .withRouter(LoadOptions.Router.MINI_LB);
        var json = spec(LoadSpec.Target.DIRECT, null, o).toJson();
        assertThat(json.get("stream").asBoolean()).isFalse();
        assertThat(json.get("prompt_tokens_range").asText()).isEqualTo("1000-16000");
        assertThat(json.get("prompt_distribution").asText()).isEqualTo("log-uniform");
        assertThat(json.get("router").asText()).isEqualTo("mini-lb");
        assertThat(json.at("/classes/1/name").asText()).isEqualTo("batch");
        assertThat(json.at("/classes/1/patience_ms").asLong()).isEqualTo(60_000);
        assertThat(spec(LoadSpec.Target.GATEWAY, null, LoadOptions.DEFAULTS).toJson().get("router").isNull()).isTrue();
        assertThat(spec(LoadSpec.Target.GATEWAY, null, LoadOptions.DEFAULTS).toJson().get("metrics_url").asText())
                .isEqualTo(GW.toString());
    }

    @Test
    void plannedRequestsAreAFunctionOfSeedAndIndexAndFollowTheShares() {
        LoadOptions o = LoadOptions.DEFAULTS.withPromptRange(1000, 16000)
                .withClasses(List.of(cls("interactive:0.3:15s"), cls("batch:0.7:60s")));
        LoadSpec s = spec(LoadSpec.Target.GATEWAY, null, o);
        int interactive = 0;
        int small = 0;
        for (int i = 0; i < 2000; i++) {
            PlannedRequest p = PlannedRequest.of(s, i);
            assertThat(p).isEqualTo(PlannedRequest.of(s, i));
            assertThat(p.promptTokens()).isBetween(1000, 16000);
            interactive += "interactive".equals(p.className()) ? 1 : 0;
            small += p.promptTokens() < 4000 ? 1 : 0;
            assertThat(p.patienceNanos()).isEqualTo(p.sloTtftNanos());
        }
        assertThat(interactive).isBetween(500, 700); // 30% of 2000
        assertThat(small).isBetween(900, 1100); // log-uniform: 1K-4K is half of 1K-16K
    }

    @Test
    void theCommandLineRefusesConflictingSizesAndTimeouts() {
        assertThat(run("--prompt-tokens", "100", "--prompt-tokens-range", "1-2"))
                .contains("give --prompt-tokens or --prompt-tokens-range, not both");
        assertThat(run("--class", "a:1:5s", "--client-timeout", "5s"))
                .contains("--client-timeout: with --class each class's patience is its clients' timeout");
        assertThat(run("--prompt-tokens-range", "lots")).contains("--prompt-tokens-range: 'lots' (expected: MIN-MAX");
        assertThat(run("--router", "mini-lb")).contains("--router applies to --target direct");
    }

    private static String run(String... extra) {
        StringWriter err = new StringWriter();
        CommandLine cmd = new CommandLine(new LoadCommand());
        cmd.setErr(new PrintWriter(err));
        String[] base = {"--target", "gateway", "--url", "http://127.0.0.1:1", "--requests", "1", "--arrival", "burst",
                "--burst", "1"};
        String[] args = java.util.stream.Stream.concat(java.util.Arrays.stream(base), java.util.Arrays.stream(extra))
                .toArray(String[]::new);
        assertThat(cmd.execute(args)).isEqualTo(2);
        return err.toString();
    }
}
