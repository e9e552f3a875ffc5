package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Hundreds of connections trickling their headers (slowloris) do not slow normal requests and
 * are all closed with 408 at the header timeout; a connection flood past http.max_connections gets
 * clean 503s while the connections already open keep being served, and the count returns to where
 * it was.
 */
class SlowlorisAndFloodEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String BODY = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}";

    @Test
    void slowlorisConnectionsAreCutAtTheHeaderTimeoutWhileNormalRequestsFlow() throws Exception {
        int slow = 300;
        try (PdTestbed bed = PdTestbed.start(1, 1, SimConfig.defaults(), "{connect: 2s}",
                "http: {header_timeout: 2s, max_connections: 1000}\n")) {
            List<Socket> sockets = new ArrayList<>();
            AtomicBoolean trickling = new AtomicBoolean(true);
            Thread trickler = null;
            try {
                for (int i = 0; i < slow; i++) {
                    Socket s = new Socket();
                    s.connect(new InetSocketAddress("127.0.0.1", bed.port()), 5000);
                    s.setSoTimeout(10_000);
                    s.getOutputStream().write("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
                    sockets.add(s);
                }
                // one more header byte on every connection each 100 ms, as slowloris does
                trickler = new Thread(() -> {
                    while (trickling.get()) {
                        for (Socket s : sockets) {
                            try {
                                s.getOutputStream().write('X');
                            } catch (IOException closed) {
                                // the gateway cut it: expected
                            }
                        }
                        try {
                            Thread.sleep(100);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                });
                trickler.start();
                long worst = 0;
                for (int i = 0; i < 40; i++) {
                    long t0 = System.nanoTime();
                    HttpResponse<String> r = bed.post("/v1/chat/completions", BODY);
                    worst = Math.max(worst, System.nanoTime() - t0);
                    assertThat(r.statusCode()).isEqualTo(200);
                }
                assertThat(Duration.ofNanos(worst)).as("slowest normal request during the attack").isLessThan(Duration.ofSeconds(2));
                int cut408 = 0;
                for (Socket s : sockets) {
                    String answer = readToEof(s);
                    if (answer.startsWith("HTTP/1.1 408 ")) {
                        assertThat(JSON.readTree(answer.substring(answer.indexOf("\r\n\r\n") + 4)).at("/error/code").asText())
                                .isEqualTo("header_timeout");
                        cut408++;
                    }
                }
                assertThat(cut408).isEqualTo(slow);
            } finally {
                trickling.set(false);
                if (trickler != null) {
                    trickler.join(5000);
                }
                for (Socket s : sockets) {
                    s.close();
                }
            }
            assertThat(bed.metric("sluice_http_rejections_total{reason=\"header_timeout\"}")).isEqualTo(slow);
            assertThat(bed.prefill().journal()).filteredOn(r -> r.method().equals("POST")).hasSize(40);
            bed.assertQuiescent();
        }
    }

    @Test
    void aConnectionFloodPastTheCapGetsClean503sAndTheGatewayKeepsServing() throws Exception {
        int cap = 50;
        try (PdTestbed bed = PdTestbed.start(1, 1, SimConfig.defaults(), "{connect: 2s}",
                "http: {max_connections: " + cap + "}\n")) {
            double before = adminMetric(bed, "sluice_client_connections");
            List<Socket> held = new ArrayList<>();
            int refused = 0;
            try {
                for (int i = 0; i < cap + 30; i++) {
                    Socket s = new Socket();
                    s.connect(new InetSocketAddress("127.0.0.1", bed.port()), 5000);
                    s.setSoTimeout(100);
                    held.add(s);
                }
                for (Socket s : held) {
                    String answer = readSome(s);
                    if (!answer.isEmpty()) {
                        assertThat(answer).startsWith("HTTP/1.1 503 ");
                        assertThat(answer.toLowerCase()).contains("connection: close").contains("retry-after: 1");
                        assertThat(JSON.readTree(answer.substring(answer.indexOf("\r\n\r\n") + 4)).at("/error/code").asText())
                                .isEqualTo("too_many_connections");
                        refused++;
                    }
                }
                int accepted = held.size() - refused;
                assertThat(accepted).isEqualTo(cap - (int) before);
                assertThat(adminMetric(bed, "sluice_client_connections")).isEqualTo(cap);
                // an accepted connection is served normally while the cap holds the rest out
                Socket first = held.get(0);
                first.setSoTimeout(10_000);
                first.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        + "Content-Length: " + BODY.length() + "\r\nConnection: close\r\n\r\n" + BODY).getBytes(StandardCharsets.US_ASCII));
                assertThat(readToEof(first)).startsWith("HTTP/1.1 200");
            } finally {
                for (Socket s : held) {
                    s.close();
                }
            }
            assertThat(adminMetric(bed, "sluice_http_rejections_total{reason=\"too_many_connections\"}")).isEqualTo(refused);
            assertThat(PdTestbed.eventually(Duration.ofSeconds(5), () -> adminMetric(bed, "sluice_client_connections") <= before))
                    .isTrue();
            assertThat(bed.post("/v1/chat/completions", BODY).statusCode()).isEqualTo(200);
            bed.assertQuiescent();
        }
    }

    /** Read from the admin listener: its connections are not client connections. */
    private static double adminMetric(PdTestbed bed, String sample) {
        try {
            String text = bed.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + bed.gateway.adminPort()
                    + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
            for (String line : text.split("\n")) {
                String name = line.substring(0, Math.max(0, line.lastIndexOf(' ')));
                if (name.replace(",}", "}").equals(sample)) {
                    return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
            return 0;
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String readSome(Socket s) throws IOException {
        try {
            return readToEof(s);
        } catch (java.net.SocketTimeoutException open) {
            return ""; // accepted and waiting for a request: nothing to read
        }
    }

    private static String readToEof(Socket s) throws IOException {
        InputStream in = s.getInputStream();
        StringBuilder out = new StringBuilder();
        byte[] buf = new byte[4096];
        try {
            int n;
            while ((n = in.read(buf)) >= 0) {
                out.append(new String(buf, 0, n, StandardCharsets.UTF_8));
            }
        } catch (java.net.SocketException reset) {
            // closed with unread bytes of ours: the answer was read before
        }
        return out.toString();
    }
}
