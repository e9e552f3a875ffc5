package dev.sluice.gateway.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * valkey/statefulset.yaml's arguments, run by a real server: Debian's {@code redis-server} (Valkey
 * forked Redis 7.2 and takes these options unchanged), started on a free loopback port with the
 * StatefulSet's own arguments, {@code $(VALKEY_PASSWORD)} expanded from the example Secret as the
 * kubelet would. It must refuse commands without the password, run without persistence and never
 * evict (a lease must not vanish to make room), and leave nothing on disk when it stops.
 */
class ValkeyArgumentsTest {
    @TempDir
    Path dir;

    @Test
    void theStatefulSetsArgumentsRunAPasswordProtectedServerThatKeepsNothing() throws Exception {
        KubernetesObjects objects = KubernetesObjects.load();
        GatewayPod pod = new GatewayPod(objects);
        Container valkey = objects.one(StatefulSet.class, "sluice-valkey").getSpec().getTemplate().getSpec()
                .getContainers().get(0);
        Map<String, String> env = new HashMap<>();
        for (EnvVar v : valkey.getEnv()) {
            var ref = v.getValueFrom().getSecretKeyRef();
            env.put(v.getName(), pod.secretValue(ref.getName(), ref.getKey()));
        }
        String password = env.get("VALKEY_PASSWORD");
        List<String> args = new ArrayList<>();
        for (String a : valkey.getArgs()) {
            args.add(GatewayPod.expand(a, env));
        }
        assertThat(args.get(0)).isEqualTo("valkey-server");
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        List<String> command = new ArrayList<>();
        command.add(binary().toString());
        command.addAll(args.subList(1, args.size()));
        // where it listens and writes here (in the pod: 6379 on the pod's address, /data)
        command.addAll(List.of("--port", String.valueOf(port), "--bind", "127.0.0.1", "--dir", dir.toString()));
        Path log = Files.createTempFile("valkey-args", ".log");
        Process server = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.to(log.toFile())).start();
        try {
            Resp resp = connect(port, server, log);
            try (resp) {
                assertThat(resp.call("PING")).startsWith("-NOAUTH");
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
            try (Stream<Path> left = Files.list(dir)) {
                assertThat(left).as("nothing persisted in --dir").isEmpty();
            }
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
