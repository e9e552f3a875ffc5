package dev.sluice.gateway.ops;

import static org.assertj.core.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs the repository's shell scripts and tools from tests, with a controlled environment. */
final class Shell {
    private Shell() {
    }

    /** The exit code, standard output and standard error of one command. */
    record Result(int exitCode, String out, String err) {
        /** The output read back the way a shell reads a printed command line: its words. */
        List<String> words() throws IOException, InterruptedException {
            Result r = run(Map.of("LINE", out.strip()), "bash", "-c", "eval \"set -- $LINE\"; printf '%s\\n' \"$@\"");
            if (r.exitCode() != 0) {
                fail("not a shell command line: " + out + "\n" + r.err());
            }
            return List.of(r.out().split("\n"));
        }

        @Override
        public String toString() {
            return "exit " + exitCode + "\nstdout: " + out + "\nstderr: " + err;
        }
    }

    /** The repository root: the first ancestor of the working directory holding scripts/serve-sglang. */
    static Path root() {
        for (Path p = Path.of(System.getProperty("user.dir")).toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("scripts/serve-sglang"))) {
                return p;
            }
        }
        throw new IllegalStateException("no scripts/serve-sglang above " + System.getProperty("user.dir"));
    }

    /**
     * Runs {@code command} with a minimal environment (PATH and HOME only, so that variables of the
     * machine running the tests, CUDA_VISIBLE_DEVICES included, cannot change the result) plus {@code env}.
     */
    static Result run(Map<String, String> env, String... command) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(Arrays.asList(command)));
        Map<String, String> e = pb.environment();
        String path = e.getOrDefault("PATH", "/usr/local/bin:/usr/bin:/bin");
        e.clear();
        e.put("PATH", path);
        e.put("HOME", System.getProperty("java.io.tmpdir"));
        e.putAll(env);
        Path out = Files.createTempFile("shell", ".out");
        Path err = Files.createTempFile("shell", ".err");
        try {
            Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            p.getOutputStream().close();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                fail("timed out after 60 s: " + List.of(command));
            }
            return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                    Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    static Result script(Map<String, String> env, String script, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(root().resolve("scripts").resolve(script).toString()));
        cmd.addAll(List.of(args));
        return run(env, cmd.toArray(String[]::new));
    }
}
