package dev.sluice.gateway.coordination;

import static org.assertj.core.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** {@code redis-cli} as a child process: what it printed, or a failed test when it exits non-zero or hangs. */
final class RedisCli {
    private RedisCli() {
    }

    static String run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getOutputStream().close(); // --cluster create asks nothing with --cluster-yes; nothing else reads stdin
        byte[] out = p.getInputStream().readAllBytes(); // ends when the process closes its output
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("redis-cli did not end within 60 s: " + command);
        }
        String text = new String(out, StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            fail("redis-cli exited with " + p.exitValue() + ": " + command + "\n" + text);
        }
        return text;
    }
}
