package dev.sluice.gateway.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The gateway as an operator runs it: a separate JVM started with {@code serve --config FILE}
 * (the test classpath, so no jar needs to be built first), its log collected, signals sent with
 * {@code kill}.
 */
public final class GatewayProcess implements AutoCloseable {
    private static final Pattern LISTENING = Pattern.compile("gateway listening address=\\S*:(\\d+)");
    private static final Pattern ADMIN = Pattern.compile("admin listening address=\\S*:(\\d+)");

    public final Process process;
    private final StringBuilder log = new StringBuilder();

    private GatewayProcess(Process process) {
        this.process = process;
    }

    public static GatewayProcess start(Path config) throws Exception {
        return start(config, java.util.Map.of());
    }

    /** With these environment variables added to the test's own. */
    public static GatewayProcess start(Path config, java.util.Map<String, String> env) throws Exception {
        return start(config, env, "--default-signal=HUP");
    }

    /**
     * ... started through {@code env} with this signal option: {@code --default-signal=HUP} (what
     * {@link #start(Path, java.util.Map)} uses: a test run under {@code nohup} would otherwise pass its
     * ignored SIGHUP on to the gateway) or {@code --ignore-signal=HUP} (to test what the gateway does then).
     */
    public static GatewayProcess start(Path config, java.util.Map<String, String> env, String signalOption)
            throws Exception {
        ProcessBuilder pb = new ProcessBuilder("env", signalOption,
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), "dev.sluice.gateway.GatewayMain", "serve",
                "--config", config.toString()).redirectErrorStream(true);
        pb.environment().putAll(env);
        GatewayProcess g = new GatewayProcess(pb.start());
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(g.process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    synchronized (g.log) {
                        g.log.append(line).append('\n');
                    }
                }
            } catch (java.io.IOException ignored) {
                // process ended
            }
        });
        reader.setDaemon(true);
        reader.start();
        return g;
    }

    public String log() {
        synchronized (log) {
            return log.toString();
        }
    }

    /** The client listener's port, once the log says it listens. */
    public int port() throws InterruptedException {
        return portFrom(LISTENING);
    }

    /** The admin listener's port, once the log says it listens. */
    public int adminPort() throws InterruptedException {
        return portFrom(ADMIN);
    }

    private int portFrom(Pattern p) throws InterruptedException {
        int[] port = {0};
        boolean up = PdTestbed.eventually(Duration.ofSeconds(40), () -> { // a cold JVM on a busy 2-core machine
            Matcher m = p.matcher(log());
            if (m.find()) {
                port[0] = Integer.parseInt(m.group(1));
                return true;
            }
            return false;
        });
        assertThat(up).as("gateway started; log:\n%s", log()).isTrue();
        return port[0];
    }

    /** {@code kill -<signal> <pid>}. */
    public void signal(String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
        assertThat(kill.waitFor(5, TimeUnit.SECONDS)).isTrue();
        assertThat(kill.exitValue()).isZero();
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroy();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        }
    }
}
