package dev.sluice.gateway.tracing.otlp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The plain-http post against a scripted collector on loopback: what it sends, the answers it
 * reads (a sized body, a chunked one, a connection the collector closes), and the failures it
 * reports (no answer in time, not HTTP, the collector gone), after which it reconnects.
 */
class PlainHttpPostTest {
    private final ServerSocket server;
    private final List<String> requests = new CopyOnWriteArrayList<>();
    private final AtomicInteger connections = new AtomicInteger();
    private final List<Socket> accepted = new CopyOnWriteArrayList<>();
    private volatile String answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    /**
     * The collector is gone: every connection is closed at once, unanswered. (Its port stays bound: a
     * port given back could be taken by any other server of the test JVM, which would answer.)
     */
    private volatile boolean gone;

    PlainHttpPostTest() throws IOException {
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::serve, "scripted-collector");
        t.setDaemon(true);
        t.start();
    }

    private void serve() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                connections.incrementAndGet();
                accepted.add(s);
                Thread c = new Thread(() -> connection(s));
                c.setDaemon(true);
                c.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private void connection(Socket s) {
        try (s; InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
            while (!gone) {
                ByteArrayOutputStream head = new ByteArrayOutputStream();
                while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
                    int c = in.read();
                    if (c < 0) {
                        return;
                    }
                    head.write(c);
                }
                String h = head.toString(StandardCharsets.ISO_8859_1);
                int length = Integer.parseInt(h.replaceAll("(?s).*Content-Length: (\\d+).*", "$1"));
                byte[] body = in.readNBytes(length);
                requests.add(h + new String(body, StandardCharsets.ISO_8859_1));
                String a = answer;
                if (a == null) {
                    Thread.sleep(5_000); // a collector that does not answer
                    return;
                }
                out.write(a.getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
                if (a.contains("Connection: close") || a.startsWith("HTTP/1.0") || !a.startsWith("HTTP/")) {
                    return;
                }
            }
        } catch (IOException | InterruptedException e) {
            // the test is over or the client left
        }
    }

    @AfterEach
    void stop() throws IOException {
        server.close();
    }

    private PlainHttpPost post(Duration timeout) {
        return new PlainHttpPost(URI.create("http://127.0.0.1:" + server.getLocalPort() + "/v1/traces"),
                Map.of("Authorization", "Bearer s3cret"), timeout);
    }

    private static byte[] body(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    @Test
    void postsTheBodyWithItsHeadersAndKeepsTheConnectionAcrossAnswers() throws Exception {
        try (PlainHttpPost p = post(Duration.ofSeconds(5))) {
            byte[] b = body("spans!--unused tail");
            assertThat(p.post(b, 6)).isEqualTo(200);
            answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
            assertThat(p.post(body("second"), 6)).isEqualTo(200);
            answer = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
            assertThat(p.post(body("third"), 5)).isEqualTo(503);
        }
        assertThat(connections).hasValue(1);
        assertThat(requests.get(0)).startsWith("POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1:" + server.getLocalPort())
                .contains("\r\nContent-Type: application/x-protobuf\r\n", "\r\nAuthorization: Bearer s3cret\r\n",
                        "\r\nContent-Length: 6\r\n\r\n")
                .endsWith("\r\n\r\nspans!");
        assertThat(requests.get(2)).endsWith("\r\n\r\nthird");
    }

    @Test
    void aCollectorThatClosesOrAnswersHttp10IsReconnectedToForTheNextPost() throws Exception {
        try (PlainHttpPost p = post(Duration.ofSeconds(5))) {
            answer = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
            assertThat(p.post(body("a"), 1)).isEqualTo(200);
            answer = "HTTP/1.0 200 OK\r\n\r\n";
            assertThat(p.post(body("b"), 1)).isEqualTo(200);
            answer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
            assertThat(p.post(body("c"), 1)).isEqualTo(200);
        }
        assertThat(connections).hasValue(3);
    }

    @Test
    void noAnswerInTimeNotHttpAndAGoneCollectorAreFailuresAndTheNextPostReconnects() throws Exception {
        try (PlainHttpPost p = post(Duration.ofMillis(300))) {
            answer = null;
            long start = System.nanoTime();
            assertThatThrownBy(() -> p.post(body("x"), 1)).isInstanceOf(SocketTimeoutException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
            answer = "SSH-2.0-OpenSSH\r\n";
            assertThatThrownBy(() -> p.post(body("y"), 1)).isInstanceOf(IOException.class).hasMessageContaining("not an HTTP answer");
            answer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
            assertThat(p.post(body("z"), 1)).isEqualTo(200);
            assertThat(connections).hasValue(3);
            gone = true; // the collector gone: its connections closed, new ones closed unanswered
            for (Socket s : accepted) {
                s.close();
            }
            assertThatThrownBy(() -> p.post(body("w"), 1)).isInstanceOf(IOException.class);
            assertThatThrownBy(() -> p.post(body("w"), 1)).as("reconnecting fails too").isInstanceOf(IOException.class);
        }
    }

    /** A load balancer or the collector closed the kept-alive socket while idle: the next post goes once more, on a new one. */
    @Test
    void aKeptAliveSocketClosedWhileIdleIsReplacedAndThePostSentOnTheNewOne() throws Exception {
        try (PlainHttpPost p = post(Duration.ofSeconds(5))) {
            assertThat(p.post(body("first"), 5)).isEqualTo(200);
            for (Socket s : accepted) {
                s.close(); // the collector's idle timeout
            }
            assertThat(p.post(body("after idle"), 10)).isEqualTo(200);
        }
        assertThat(connections).hasValue(2);
        assertThat(requests).hasSize(2);
        assertThat(requests.get(1)).endsWith("\r\n\r\nafter idle");
    }

    /** An interim answer (100 Continue) is read past; the post returns the final status and the next post its own. */
    @Test
    void anInterimAnswerIsReadPastToTheFinalOne() throws Exception {
        try (PlainHttpPost p = post(Duration.ofSeconds(5))) {
            answer = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
            assertThat(p.post(body("a"), 1)).isEqualTo(202);
            answer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
            assertThat(p.post(body("b"), 1)).isEqualTo(200);
            answer = "HTTP/1.1 2x0 Odd\r\nContent-Length: 0\r\n\r\n";
            assertThatThrownBy(() -> p.post(body("c"), 1)).isInstanceOf(IOException.class)
                    .hasMessageContaining("not an HTTP status");
        }
        assertThat(connections).as("a malformed answer is a failure on that connection only, not sent again").hasValue(1);
    }
}
