package dev.sluice.gateway.observability;

import static org.assertj.core.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Debian's {@code prometheus} package: {@code /usr/bin/prometheus} and {@code /usr/bin/promtool}.
 * A missing binary fails the test (CI installs it); the test classes that need one are disabled
 * with {@code -Dsluice.skipPrometheus=true} (their {@code @DisabledIfSystemProperty} says so).
 */
final class PrometheusBinaries {
    static final String SKIP_PROPERTY = "sluice.skipPrometheus";

    private PrometheusBinaries() {
    }

    /** The binary, or a failure saying how to install it (classes using it skip on {@value #SKIP_PROPERTY}). */
    static Path require(String name) {
        Path bin = Path.of("/usr/bin", name);
        if (!Files.isExecutable(bin)) {
            fail(bin + " is missing: `bash .ci/run` installs it (Debian package `prometheus`; "
                    + "`bash .ci/run --install-only` installs without running the build), "
                    + "or run with -D" + SKIP_PROPERTY + "=true to skip these tests");
        }
        return bin;
    }

    /** The exit code and merged stdout/stderr of one command. */
    record Result(int exitCode, String output) {
    }

    static Result run(Path workDir, byte[] stdin, String... command) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(command));
        Path out = Files.createTempFile(workDir, "out", ".txt");
        Process p = new ProcessBuilder(cmd).directory(workDir.toFile()).redirectErrorStream(true)
                .redirectOutput(out.toFile()).start();
        try (var in = p.getOutputStream()) {
            if (stdin != null) {
                in.write(stdin);
            }
        }
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("timed out after 60 s: " + cmd);
        }
        return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
    }
}
