package dev.sluice.gateway.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.GatewayMain;
import dev.sluice.gateway.config.ConfigLoader;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code check-config}, {@code serve --check} and {@code schema} as an operator runs them. */
class CheckConfigCommandTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final String VALID = """
            listen: { port: 8080 }
            workers:
              api_key_env: SIM_WORKER_KEY
              prefill: [ { url: "http://10.0.0.1:30000", bootstrap_port: 8998 } ]
              decode: [ { url: "http://10.0.0.2:30001" } ]
            """;

    @TempDir
    Path dir;

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(Object command, Map<String, String> env, String... args) {
        if (command instanceof CheckConfigCommand c) {
            c.source.env = env;
        } else if (command instanceof ServeCommand s) {
            s.source.env = env;
        }
        return new CommandLine(command).setOut(new PrintWriter(out)).setErr(new PrintWriter(err)).execute(args);
    }

    private Path file(String yaml) throws IOException {
        Path f = dir.resolve("gateway.yaml");
        Files.writeString(f, yaml);
        return f;
    }

    @Test
    void discoveryKeysArePrintedWithTheirDefaultsAndTheirMistakesNamed() throws IOException {
        Path f = file("""
                workers:
                  prefill: [ { url: "http://10.0.0.1:30000", bootstrap_port: 8998 } ]
                  discovery:
                    decode:
                      kubernetes: { namespace: llm, selector: { app: sglang-decode } }
                """);
        int code = run(new CheckConfigCommand(), Map.of(), "--config", f.toString());
        assertThat(code).as(err.toString()).isZero();
        assertThat(out.toString()).contains("discovery:", "kubernetes:", "namespace: llm", "app: sglang-decode",
                "port_name: http", "scheme: http");

        Path bad = file("""
                workers:
                  prefill: [ { url: "http://10.0.0.1:30000" } ]
                  discovery:
                    decode:
                      kubernetes: { selector: {}, bootstrap_port_name: boot }
                      dns: { name: "bad name!", port: 0, interval: 5s, min_interval: 10s, server: "ns.example:53" }
                    prefill:
                      dns: { scheme: gopher }
                """);
        out.getBuffer().setLength(0);
        err.getBuffer().setLength(0);
        assertThat(run(new CheckConfigCommand(), Map.of(), "--config", bad.toString())).isNotZero();
        assertThat(err.toString()).contains("workers.discovery.decode: dns and kubernetes (expected: one mechanism "
                + "per role list)", "workers.discovery.decode.kubernetes.bootstrap_port_name: unknown key",
                "workers.discovery.decode.dns.name: bad name!", "workers.discovery.decode.dns.port: 0",
                "workers.discovery.decode.dns.server: ns.example:53 (expected: an IP address and port",
                "workers.discovery.prefill.dns.scheme: gopher (expected: http or https)",
                "workers.discovery.prefill.dns.name: missing");
    }

    @Test
    void aValidFilePrintsTheEffectiveConfigurationAndExitsZero() throws IOException {
        Path f = file(VALID);
        int code = run(new CheckConfigCommand(), Map.of("SIM_WORKER_KEY", "sk-worker-secret", "SLUICE_ADMIN_PORT", "9001"),
                "--config", f.toString(), "--set", "listen.port=9000");

        assertThat(code).as(err.toString()).isZero();
        String printed = out.toString();
        assertThat(printed).startsWith("# configuration OK: " + f)
                .contains("# workers.api_key_env: SIM_WORKER_KEY is set (***)")
                .contains("port: 9000", "port: 9001", "first_token: 2m", "max_pending_tokens: 262144")
                .doesNotContain("sk-worker-secret");
        assertThat(err.toString()).isEmpty();
        // what it prints is itself a valid configuration, the same one
        assertThat(ConfigLoader.parse(printed, "printed", dev.sluice.gateway.config.ConfigOverrides.of(
                Map.of("SIM_WORKER_KEY", "sk-worker-secret"), java.util.List.of())).listen().port()).isEqualTo(9000);
    }

    @Test
    void anInvalidFilePrintsEveryProblemWithItsLineAndExitsOne() throws IOException {
        Path f = file("""
                listen:
                  port: 70000
                timeouts:
                  conect: 2s
                workers:
                  prefill: [ { url: "http://10.0.0.1:30000" } ]
                  decode:
                    - url: ftp://10.0.0.2
                """);
        int code = run(new CheckConfigCommand(), Map.of("SLUICE_ADMIN_PORT", "eighty"), "--config", f.toString());

        assertThat(code).isEqualTo(1);
        assertThat(out.toString()).isEmpty();
        assertThat(err.toString()).isEqualTo("sluice-gateway: invalid configuration: 4 problems in " + f + ":\n"
                + "  " + f + ":2: listen.port: 70000 (expected: an integer in [0, 65535])\n"
                + "  " + f + ":4: timeouts.conect: unknown key (expected one of: abort, connect, first_token, "
                + "idle_stream, request)\n"
                + "  " + f + ":8: workers.decode[0].url: ftp://10.0.0.2 (expected: an http:// or https:// URL with a host)\n"
                + "  env SLUICE_ADMIN_PORT: admin.port: eighty (expected: an integer in [0, 65535])\n");
    }

    @Test
    void oneProblemIsOneLineAndAMissingFileIsAProblem() throws IOException {
        Path f = file(VALID);
        assertThat(run(new CheckConfigCommand(), Map.of(), "--config", f.toString())).isEqualTo(1);
        assertThat(err.toString()).isEqualTo("sluice-gateway: invalid configuration: " + f + ":3: workers.api_key_env: "
                + "SIM_WORKER_KEY (expected: the name of a set, non-empty environment variable holding the workers' API "
                + "key (SIM_WORKER_KEY is unset))\n");

        err.getBuffer().setLength(0);
        assertThat(run(new CheckConfigCommand(), Map.of(), "--config", dir.resolve("nope.yaml").toString())).isEqualTo(1);
        assertThat(err.toString()).isEqualTo("sluice-gateway: invalid configuration: " + dir.resolve("nope.yaml")
                + ": no such file\n");
    }

    @Test
    void quietPrintsNothingForAValidFile() throws IOException {
        Path f = file(VALID);
        assertThat(run(new CheckConfigCommand(), Map.of("SIM_WORKER_KEY", "k"), "-q", "--config", f.toString())).isZero();
        assertThat(out.toString()).isEmpty();
    }

    /** On vLLM, DP-aware routing depends on the engines each worker's metrics show: check-config says so (a note, silent under -q). */
    @Test
    void aVllmFleetIsNotedAsRoutedByItsEngines() throws IOException {
        Path f = file("disaggregation: vllm\nworkers: {prefill: [{url: 'http://127.0.0.1:30000'}], "
                + "decode: [{url: 'http://127.0.0.1:30001'}]}\n");
        assertThat(run(new CheckConfigCommand(), Map.of(), "--config", f.toString())).isZero();
        assertThat(err.toString()).contains("sluice-gateway: note: routing.dp_aware: auto (disaggregation: vllm): "
                + "a vLLM worker is routed per rank when its /metrics shows more than one engine");
        err.getBuffer().setLength(0);
        assertThat(run(new CheckConfigCommand(), Map.of(), "-q", "--config", f.toString())).isZero();
        assertThat(err.toString()).isEmpty();
    }

    /** With pools, check-config judges each pool's view and names the pool (not only the default pool's). */
    @Test
    void aWarningInTheSecondPoolIsPrintedWithItsName() throws IOException {
        Path f = file("""
                pools:
                  - name: big
                    models: [deepseek-v3]
                    workers: { prefill: [ { url: "http://127.0.0.1:30000" } ], decode: [ { url: "http://127.0.0.1:30001" } ] }
                  - name: small
                    models: [qwen3-8b]
                    workers: { prefill: [ { url: "http://127.0.0.1:30002" } ], decode: [ { url: "http://127.0.0.1:30003" } ] }
                    health: { timeout: 1s }
                """);
        assertThat(run(new CheckConfigCommand(), Map.of(), "--config", f.toString())).isZero();
        assertThat(err.toString()).contains("sluice-gateway: warning: pools[small].health.timeout: 1s (expected: >= 2s)")
                .doesNotContain("pools[big]");
    }

    @Test
    void serveCheckStillValidatesAndPrints() throws IOException {
        Path f = file(VALID);
        assertThat(run(new ServeCommand(), Map.of("SIM_WORKER_KEY", "k"), "--check", "--config", f.toString())).isZero();
        assertThat(out.toString()).startsWith("# configuration OK: ").contains("first_token: 2m");
        assertThat(run(new ServeCommand(), Map.of(), "--check", "--config", f.toString(), "--set", "listen.port=-1"))
                .isEqualTo(2);
        assertThat(err.toString()).contains("listen.port: -1 (expected: an integer in [0, 65535])");
    }

    @Test
    void schemaPrintsTheCommittedSchemaAndTheMainCommandHasTheSubcommands() throws IOException {
        assertThat(new CommandLine(new GatewayMain()).getSubcommands())
                .containsKeys("serve", "check-config", "schema", "status");
        assertThat(run(new SchemaCommand(), Map.of())).isZero();
        assertThat(out.toString()).isEqualTo(Files.readString(ROOT.resolve("config/gateway.schema.json")));
        out.getBuffer().setLength(0);
        assertThat(run(new SchemaCommand(), Map.of(), "--format", "markdown")).isZero();
        assertThat(Files.readString(ROOT.resolve("docs/configuration.md"))).contains(out.toString());
    }

    /**
     * The Redis password never reaches check-config's output: not from the environment variable that holds
     * it (a valid file), nor from a URL that carries it (refused, in the file or by --set, without the URL's
     * user part).
     */
    @Test
    void theRedisPasswordIsPrintedNowhere() throws IOException {
        String secret = "pw-7f3a9c-secret";
        Path f = file(VALID + """
                coordination:
                  redis: { url: "redis://10.0.0.9:6379", username: sluice, password_env: SLUICE_REDIS_PASSWORD }
                """);
        Map<String, String> env = Map.of("SIM_WORKER_KEY", "sk-worker-secret", "SLUICE_REDIS_PASSWORD", secret);
        assertThat(run(new CheckConfigCommand(), env, "--config", f.toString())).as(err.toString()).isZero();
        assertThat(out.toString()).contains("url: redis://10.0.0.9:6379", "password_env: SLUICE_REDIS_PASSWORD",
                "username: sluice");
        assertThat(out.toString() + err).doesNotContain(secret);

        for (String url : java.util.List.of("redis://" + secret + "@10.0.0.9:6379",
                "rediss://sluice:" + secret + "@10.0.0.9:6380", "redis://:" + secret + "@10.0.0.9:6379")) {
            out.getBuffer().setLength(0);
            err.getBuffer().setLength(0);
            Path bad = file(VALID + "coordination:\n  redis: { url: \"" + url + "\" }\n");
            assertThat(run(new CheckConfigCommand(), env, "--config", bad.toString())).as(url).isEqualTo(1);
            assertThat(err.toString()).as(url).contains("coordination.redis.url: redis")
                    .contains("***@10.0.0.9").contains("(expected: no credentials in the URL");
            assertThat(out.toString() + err).as(url).doesNotContain(secret);

            out.getBuffer().setLength(0);
            err.getBuffer().setLength(0);
            assertThat(run(new CheckConfigCommand(), env, "--config", f.toString(), "--set",
                    "coordination.redis.url=" + url)).as(url).isEqualTo(1);
            assertThat(err.toString()).as(url).contains("--set coordination.redis.url").contains("no credentials");
            assertThat(out.toString() + err).as(url).doesNotContain(secret);
        }
    }

    /** An admin listener others can reach needs a token: check-config says so, naming both sources; serve --check too. */
    @Test
    void anAdminListenerOffLoopbackWithoutATokenIsAnError() throws IOException {
        Path f = file(VALID + "admin: { host: 0.0.0.0 }\n");
        Map<String, String> env = Map.of("SIM_WORKER_KEY", "sk-worker-secret");
        assertThat(run(new CheckConfigCommand(), env, "--config", f.toString())).isEqualTo(1);
        assertThat(err.toString()).contains("gateway.yaml:6: admin.host: 0.0.0.0 (expected: a loopback address")
                .contains("SLUICE_ADMIN_TOKEN").contains("admin.token_file");
        assertThat(out.toString()).isEmpty();
        err.getBuffer().setLength(0);
        assertThat(run(new ServeCommand(), env, "--config", f.toString(), "--check")).isEqualTo(2);
        assertThat(err.toString()).contains("admin.host: 0.0.0.0").contains("admin.token_file");

        // with the token file: valid, the file named, its contents not printed
        Path token = Files.writeString(dir.resolve("admin-token"), "adm-token-4c2f\n");
        err.getBuffer().setLength(0);
        assertThat(run(new CheckConfigCommand(), env, "--config", f.toString(), "--set",
                "admin.token_file=" + token)).as(err.toString()).isZero();
        assertThat(out.toString()).contains("# admin token: admin.token_file (***)")
                .contains("token_file: " + token).doesNotContain("adm-token-4c2f");
    }
}
