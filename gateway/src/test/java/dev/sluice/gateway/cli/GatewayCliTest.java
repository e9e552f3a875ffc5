package dev.sluice.gateway.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.GatewayMain;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class GatewayCliTest {
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        CommandLine cli = new CommandLine(new GatewayMain());
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        return cli.execute(args);
    }

    @Test
    void helpDescribesServe() {
        assertThat(run("serve", "--help")).isZero();
        assertThat(out.toString()).contains("--config");
    }

    @Test
    void aMissingConfigFileIsAClearErrorAndANonZeroExit() {
        assertThat(run("serve", "--config", "/nonexistent/gateway.yaml")).isEqualTo(2);
    }

    @Test
    void anInvalidConfigFileIsAClearErrorAndANonZeroExit(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("bad.yaml");
        Files.writeString(file, "workers: { prefill: [], decode: [] }\n");
        assertThat(run("serve", "--config", file.toString())).isEqualTo(2);
    }

    @Test
    void checkValidatesWithoutServing() {
        assertThat(run("serve", "--check", "--config", "../config/demo.yaml")).isZero();
    }

    @Test
    void noConfigOptionIsAUsageError() {
        assertThat(run("serve")).isNotZero();
        assertThat(err.toString()).contains("--config");
    }
}
