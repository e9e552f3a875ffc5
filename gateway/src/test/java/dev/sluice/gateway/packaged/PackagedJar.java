package dev.sluice.gateway.packaged;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The jar that {@code package} built ({@code gateway/target/sluice-gateway.jar}, named by the system
 * property {@code sluice.jar} that the {@code packaged} surefire execution sets), run as a user runs
 * it: {@code java -jar}, in its own process, its output read from the pipe.
 */
final class PackagedJar {
    private PackagedJar() {
    }

    /** The exit code and the exact bytes (as UTF-8) a command wrote to standard output and error. */
    record Run(int exitCode, String out, String err) {
        @Override
        public String toString() {
            return "exit " + exitCode + "\nstdout (" + out.length() + " chars): "
                    + out.substring(0, Math.min(out.length(), 2000)) + "\nstderr: " + err;
        }
    }

    static Path jar() {
        String p = System.getProperty("sluice.jar");
        assertThat(p).as("system property sluice.jar (set by the packaged surefire execution)").isNotNull();
        Path jar = Path.of(p);
        assertThat(jar).as("the packaged jar: run mvn package first").isRegularFile();
        return jar;
    }

    /** The repository root: the parent of the gateway module, where the tests run. */
    static Path root() {
        return Path.of("..").toAbsolutePath().normalize();
    }

    static Run run(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", jar().toString()));
        cmd.addAll(List.of(args));
        Path out = Files.createTempFile("jar", ".out");
        Path err = Files.createTempFile("jar", ".err");
        try {
            // to files, not pipes read by a thread: what the process wrote before it exited is all there
            Process p = new ProcessBuilder(cmd).directory(root().toFile())
                    .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            p.getOutputStream().close();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("timed out after 60 s: " + cmd);
            }
            return new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                    Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }
}
