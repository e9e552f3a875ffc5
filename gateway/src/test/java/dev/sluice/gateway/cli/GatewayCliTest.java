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
    void hashKeyPrintsTheSha256OfTheKeyOnStandardInput() {
        java.io.InputStream stdin = System.in;
        try {
            System.setIn(new java.io.ByteArrayInputStream("abc\n".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
            assertThat(run("hash-key")).isZero();
            // the FIPS 180-2 test vector: what printf %s abc | sha256sum prints
            assertThat(out.toString().trim()).isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
            System.setIn(new java.io.ByteArrayInputStream(new byte[0]));
            assertThat(run("hash-key")).isEqualTo(2);
            assertThat(err.toString()).contains("no key on standard input");
        } finally {
            System.setIn(stdin);
        }
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
