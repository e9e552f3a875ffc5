package dev.sluice.gateway.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.KeyToPath;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import java.io.BufferedInputStream;
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
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * valkey/statefulset.yaml's command, run for real: its shell script, with the Secret mounted as a file
 * (the example Secret's value, written where the pod's volume mounts it, both mounts moved under a
 * temporary directory), starts Debian's {@code redis-server} (Valkey forked Redis 7.2 and takes these
 * options unchanged; a {@code valkey-server} on the PATH that records its arguments runs it) on a free loopback port.
 * It must refuse commands without the password, have the password nowhere in its command line or
 * environment (what {@code ps} and the pod spec show), run without persistence and never evict (a lease
 * must not vanish to make room), and leave nothing on disk when it stops. A password with the characters
 * Valkey's config syntax treats specially works too.
 */
class ValkeyArgumentsTest {
    @TempDir
    Path dir;

    @Test
    void theStatefulSetsCommandRunsAPasswordProtectedServerThatKeepsNothing() throws Exception {
        KubernetesObjects objects = KubernetesObjects.load();
        GatewayPod pod = new GatewayPod(objects);
        StatefulSet set = objects.one(StatefulSet.class, "sluice-valkey");
        var secret = set.getSpec().getTemplate().getSpec().getVolumes().stream().filter(v -> v.getSecret() != null)
                .findFirst().orElseThrow().getSecret();
        String example = pod.secretValue(secret.getSecretName(), secret.getItems().get(0).getKey());
        runAndCheck(set, example, "example");
    }

    /** Quotes, backslashes, spaces, what a shell or Valkey's parser would take for syntax: the password as written. */
    @Test
    void aPasswordWithConfigSyntaxInItIsTakenAsWritten() throws Exception {
        StatefulSet set = KubernetesObjects.load().one(StatefulSet.class, "sluice-valkey");
        runAndCheck(set, "p\"w d\\x41$(id)`id`'#;\"", "special");
    }

    private void runAndCheck(StatefulSet set, String password, String name) throws Exception {
        PodSpec spec = set.getSpec().getTemplate().getSpec();
        Container valkey = spec.getContainers().get(0);
        assertThat(valkey.getEnv()).isNullOrEmpty();
        Path root = Files.createDirectories(dir.resolve(name));
        // each mount of the pod, moved under root; the Secret's items written as the kubelet would
        Map<String, String> moved = new HashMap<>();
        Path runDir = null;
        for (VolumeMount m : valkey.getVolumeMounts()) {
            Volume v = spec.getVolumes().stream().filter(x -> x.getName().equals(m.getName())).findFirst().orElseThrow();
            Path local = Files.createDirectories(root.resolve(m.getName()));
            moved.put(m.getMountPath(), local.toString());
            if (v.getSecret() != null) {
                for (KeyToPath item : v.getSecret().getItems()) {
                    Files.writeString(local.resolve(item.getPath()), password);
                }
            } else if (v.getEmptyDir() != null && "Memory".equals(v.getEmptyDir().getMedium())) {
                runDir = local;
            }
        }
        assertThat(runDir).as("a memory-backed emptyDir for the rendered config").isNotNull();
        List<String> command = new ArrayList<>();
        for (String part : valkey.getCommand()) {
            for (Map.Entry<String, String> e : moved.entrySet()) {
                part = part.replace(e.getKey() + "/", e.getValue() + "/");
            }
            command.add(part);
        }
        command.addAll(valkey.getArgs() == null ? List.of() : valkey.getArgs());
        assertThat(String.join(" ", command)).doesNotContain(password);
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Path data = Files.createDirectories(root.resolve("dir"));
        // where it listens and writes here (in the pod: 6379 on the pod's address, /data)
        command.addAll(List.of("--port", String.valueOf(port), "--bind", "127.0.0.1", "--dir", data.toString()));
        Path bin = Files.createDirectories(root.resolve("bin"));
        // valkey-server here: records the arguments it is given (what ps shows until the server retitles
        // itself), then is redis-server
        Path argv = root.resolve("argv.txt");
        Path wrapper = Files.writeString(bin.resolve("valkey-server"), "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + argv
                + "'\nexec '" + binary() + "' \"$@\"\n");
        wrapper.toFile().setExecutable(true);
        Path log = Files.createTempFile("valkey-args", ".log");
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.to(log.toFile()));
        pb.environment().put("PATH", bin + ":" + System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
        Process server = pb.start();
        try {
            Resp resp = connect(port, server, log);
            try (resp) {
                // the first reply comes from the event loop, which starts after the server retitles
                // itself (redis 7.0 listens, and the kernel accepts, before that: reading cmdline right
                // after connect could see the old title)
                assertThat(resp.call("PING")).startsWith("-NOAUTH");
                // what ps and /proc show of the running server: the script exec'd it, same pid
                Path proc = Path.of("/proc", Long.toString(server.pid()));
                String cmdline = new String(Files.readAllBytes(proc.resolve("cmdline")), StandardCharsets.UTF_8);
                String environ = new String(Files.readAllBytes(proc.resolve("environ")), StandardCharsets.UTF_8);
                assertThat(cmdline).contains("127.0.0.1:" + port).doesNotContain(password);
                assertThat(Files.readString(argv)).as("valkey-server's arguments").contains(runDir.resolve("auth.conf")
                        .toString()).doesNotContain(password);
                assertThat(environ).doesNotContain(password);
                assertThat(Files.getPosixFilePermissions(runDir.resolve("auth.conf")))
                        .as("the rendered file: its owner's only").containsOnly(PosixFilePermission.OWNER_READ,
                                PosixFilePermission.OWNER_WRITE);

                assertThat(resp.call("AUTH", "wrong-" + password)).startsWith("-");
                assertThat(resp.call("AUTH", password)).isEqualTo("+OK");
                assertThat(resp.call("CONFIG", "GET", "save")).isEqualTo("[save, ]");
                assertThat(resp.call("CONFIG", "GET", "appendonly")).isEqualTo("[appendonly, no]");
                assertThat(resp.call("CONFIG", "GET", "maxmemory")).isEqualTo("[maxmemory, 67108864]");
                assertThat(resp.call("CONFIG", "GET", "maxmemory-policy")).isEqualTo("[maxmemory-policy, noeviction]");
                assertThat(resp.call("SET", "{sluice}probe", "1")).isEqualTo("+OK");
                resp.call("SHUTDOWN"); // the connection closes without a reply when it goes
            }
            assertThat(server.waitFor(20, TimeUnit.SECONDS)).as("redis-server stops on SHUTDOWN").isTrue();
            try (Stream<Path> left = Files.list(data)) {
                assertThat(left).as("nothing persisted in --dir").isEmpty();
            }
            assertThat(Files.readString(log)).doesNotContain(password);
        } finally {
            server.destroyForcibly();
            server.waitFor(20, TimeUnit.SECONDS);
            Files.deleteIfExists(log);
        }
    }

    private static Path binary() {
        for (String name : List.of("valkey-server", "redis-server")) {
            for (String d : (System.getenv().getOrDefault("PATH", "") + ":/usr/bin").split(":")) {
                if (!d.isEmpty() && Files.isExecutable(Path.of(d, name))) {
                    return Path.of(d, name);
                }
            }
        }
        return fail("redis-server is missing: Debian's package redis-server (`apt-get install redis-server`)");
    }

    /** Connects once the server listens (polled with a deadline), or fails with its log. */
    private static Resp connect(int port, Process server, Path log) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            if (!server.isAlive()) {
                fail("redis-server exited with " + server.exitValue() + ":\n" + Files.readString(log));
            }
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
                s.setSoTimeout(5000);
                return new Resp(s);
            } catch (IOException notYet) {
                s.close();
                Thread.sleep(20); // the pace of a poll with a deadline
            }
        }
        return fail("redis-server not listening within 20 s:\n" + Files.readString(log));
    }

    /** Just enough RESP2: commands as arrays of bulk strings; replies as text ("+OK", "-ERR ...", "[a, b]"). */
    private static final class Resp implements AutoCloseable {
        private final Socket socket;
        private final OutputStream out;
        private final InputStream in;

        Resp(Socket socket) throws IOException {
            this.socket = socket;
            this.out = socket.getOutputStream();
            this.in = new BufferedInputStream(socket.getInputStream());
        }

        String call(String... words) throws IOException {
            StringBuilder b = new StringBuilder("*").append(words.length).append("\r\n");
            for (String w : words) {
                b.append('$').append(w.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(w).append("\r\n");
            }
            out.write(b.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            return reply();
        }

        private String reply() throws IOException {
            String line = line();
            if (line == null) {
                return "(closed)";
            }
            return switch (line.charAt(0)) {
                case '+', '-', ':' -> line;
                case '$' -> {
                    int n = Integer.parseInt(line.substring(1));
                    if (n < 0) {
                        yield "(nil)";
                    }
                    String s = new String(in.readNBytes(n), StandardCharsets.UTF_8);
                    in.readNBytes(2);
                    yield s;
                }
                case '*' -> {
                    int n = Integer.parseInt(line.substring(1));
                    List<String> items = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        items.add(reply());
                    }
                    yield items.toString();
                }
                default -> throw new IOException("unexpected reply " + line);
            };
        }

        private String line() throws IOException {
            StringBuilder b = new StringBuilder();
            int c;
            while ((c = in.read()) != -1) {
                if (c == '\r') {
                    in.read(); // \n
                    return b.toString();
                }
                b.append((char) c);
            }
            return b.length() == 0 ? null : b.toString();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}
