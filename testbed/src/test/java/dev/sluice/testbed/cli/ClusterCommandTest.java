package dev.sluice.testbed.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The {@code cluster} command's arguments that fail before any server starts. */
class ClusterCommandTest {
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        CommandLine cmd = new CommandLine(new ClusterCommand());
        cmd.setErr(new PrintWriter(err));
        return cmd.execute(args);
    }

    @Test
    void anUnknownModeIsAUsageError() {
        assertThat(run("--base-port", "0", "--mode", "trtllm")).isEqualTo(2);
        assertThat(err.toString()).contains("--mode: trtllm (expected: sglang, vllm or unified)");
    }

    @Test
    void unifiedModeRefusesPrefillServers() {
        assertThat(run("--base-port", "0", "--mode", "unified", "--prefill", "1")).isEqualTo(2);
        assertThat(err.toString()).contains("prefill: 1").contains("UNIFIED");
    }

    @Test
    void theRealServerSettingsAreOptionsValidatedBeforeAnyServerStarts() {
        assertThat(run("--base-port", "0", "--dp-size", "0")).isEqualTo(2);
        assertThat(err.toString()).contains("dpSize: 0");
        assertThat(run("--base-port", "0", "--max-queued-requests", "-1")).isEqualTo(2);
        assertThat(err.toString()).contains("maxQueuedRequests: -1");
        StringWriter out = new StringWriter();
        CommandLine cmd = new CommandLine(new ClusterCommand());
        cmd.setOut(new PrintWriter(out));
        assertThat(cmd.execute("--help")).isZero();
        assertThat(out.toString()).contains("--dp-size").contains("--[no-]health-generation")
                .contains("--health-check-timeout").contains("--context-length").contains("--admin-api-key")
                .contains("--max-queued-requests").contains("--[no-]enable-metrics");
    }
}
