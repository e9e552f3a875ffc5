package dev.sluice.gateway.coordination;

import static org.assertj.core.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code redis-server} (Debian's package; {@code .ci/run} installs it) run as a child process
 * on a free loopback port, no persistence. {@link #stop} and {@link #restart} (same port) let a test
 * take Redis away and bring it back. Extra arguments turn on what a test needs (cluster mode, a TLS
 * port, {@code requirepass}); the plain port always stays on, for the readiness check and {@link #cli}.
 */
final class RedisServer implements AutoCloseable {
    private final Path binary;
    private final Path dir;
    private final int port;
    private final List<String> extraArgs;
    private Process process;

    private RedisServer(Path binary, Path dir, int port, List<String> extraArgs) {
        this.binary = binary;
        this.dir = dir;
        this.port = port;
        this.extraArgs = List.copyOf(extraArgs);
    }

    /** The binary on PATH or in /usr/bin, or a failure saying how to install it. */
    static Path binary() {
        List<Path> candidates = new ArrayList<>();
        String path = System.getenv("PATH");
        if (path != null) {
            for (String d : path.split(":")) {
                if (!d.isEmpty()) {
                    candidates.add(Path.of(d, "redis-server"));
                }
            }
        }
        candidates.add(Path.of("/usr/bin/redis-server"));
        for (Path p : candidates) {
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        fail("redis-server is missing: `bash .ci/run --install-only` installs it (Debian package `redis-server`)");
        return null;
    }

    static RedisServer start(Path dir) throws IOException, InterruptedException {
        return start(dir, List.of());
    }

    /** With more {@code redis-server} arguments, e.g. {@code --cluster-enabled yes} or {@code --tls-port N ...}. */
    static RedisServer start(Path dir, List<String> extraArgs) throws IOException, InterruptedException {
        RedisServer r = new RedisServer(binary(), dir, freePort(), extraArgs);
        r.restart();
        return r;
    }

    /** A loopback port nothing listens on (the OS's choice, released at once). */
    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /**
     * Runs {@code redis-cli} (Debian ships it with the server) against this server's plain port and
     * returns what it printed; a non-zero exit fails the test.
     */
    String cli(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(binary.resolveSibling("redis-cli").toString(), "-h", "127.0.0.1",
                "-p", String.valueOf(port)));
        cmd.addAll(List.of(args));
        return RedisCli.run(cmd);
    }

    Path dir() {
        return dir;
    }

    int port() {
        return port;
    }

    String url() {
        return "redis://127.0.0.1:" + port;
    }

    /** Starts (again) on the same port and waits until it answers PING. */
    void restart() throws IOException, InterruptedException {
        Files.createDirectories(dir);
        Path log = dir.resolve("redis.log");
        List<String> cmd = new ArrayList<>(List.of(binary.toString(), "--port", String.valueOf(port), "--bind",
                "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toString(), "--protected-mode", "no"));
        cmd.addAll(extraArgs);
        process = new ProcessBuilder(cmd)
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                fail("redis-server exited with " + process.exitValue() + ":\n" + Files.readString(log));
            }
            if (pong()) {
                return;
            }
            Thread.sleep(20); // the pace of a poll with a deadline
        }
        fail("redis-server not answering within 20 s:\n" + Files.readString(log));
    }

    private boolean pong() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
            s.setSoTimeout(1000);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] b = new byte[7];
            int n = in.readNBytes(b, 0, 7);
            String reply = new String(b, 0, n, StandardCharsets.US_ASCII);
            // with requirepass, the server's answer to an unauthenticated PING: up all the same
            return reply.equals("+PONG\r\n") || reply.startsWith("-NOAUTH");
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * SIGSTOP: the server stays connected but answers nothing (a hung Redis, a long pause of its host), until
     * {@link #resume}. No {@link #cli} meanwhile: it would wait as the clients do.
     */
    void pause() throws IOException, InterruptedException {
        signal("-STOP");
    }

    /** SIGCONT after {@link #pause}: the server answers again, what arrived meanwhile first. */
    void resume() throws IOException, InterruptedException {
        signal("-CONT");
    }

    private void signal(String sig) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", sig, String.valueOf(process.pid())).inheritIO().start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            fail("kill " + sig + " " + process.pid() + " failed");
        }
    }

    /**
     * The client connections the server holds now, its own observer (the {@code redis-cli} asking) left out:
     * one line of {@code CLIENT LIST} each.
     */
    List<String> clients() throws IOException, InterruptedException {
        return cli("client", "list").lines().filter(l -> !l.isBlank() && !l.contains(" cmd=client|list ")).toList();
    }

    /** Kills the server (SIGKILL: as a crash or a partition looks to the clients) and waits for its exit. */
    void stop() throws InterruptedException {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            process.waitFor(20, TimeUnit.SECONDS);
        }
    }

    @Override
    public void close() throws InterruptedException {
        stop();
    }
}
