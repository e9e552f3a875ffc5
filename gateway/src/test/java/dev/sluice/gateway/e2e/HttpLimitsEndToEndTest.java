package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The HTTP layer's limits and framing rules, over raw sockets (the test writes every byte): each
 * refusal is its status with an OpenAI-style JSON error, the connection is closed, no worker is
 * contacted, and the gateway then serves a normal request. Then the clocks: header and body
 * timeouts answer 408, an idle keep-alive connection is closed, and a request the gateway is
 * working on longer than the idle timeout is never cut.
 */
class HttpLimitsEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String BODY = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}";
    private static PdTestbed bed;

    @BeforeAll
    static void start() throws Exception {
        bed = PdTestbed.start(1, 1, SimConfig.defaults().withDecodeStep(Duration.ofMillis(5)), "{connect: 2s}",
                "http: {max_initial_line: 2048, max_header_size: 4096, max_headers: 40, header_timeout: 600ms, "
                        + "body_timeout: 600ms, idle_timeout: 800ms}\n");
    }

    @AfterAll
    static void stop() throws Exception {
        bed.close();
    }

    @BeforeEach
    void clearJournals() {
        bed.prefill().clear();
        bed.decode().clear();
    }

    @AfterEach
    void quiescent() throws Exception {
        bed.assertQuiescent();
    }

    record Case(String name, String request, int status, String code, String reason) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Case[] refusals() {
        String post = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
        String chunked = post + "Transfer-Encoding: chunked\r\n\r\n" + Integer.toHexString(BODY.length()) + "\r\n" + BODY
                + "\r\n0\r\n\r\n";
        StringBuilder many = new StringBuilder(post);
        for (int i = 0; i < 41; i++) {
            many.append("X-H").append(i).append(": v\r\n");
        }
        return new Case[]{
                new Case("request line too long", "GET /v1/models?" + "a".repeat(3000) + " HTTP/1.1\r\nHost: x\r\n\r\n",
                        414, "request_line_too_long", "request_line_too_long"),
                new Case("headers too large", post + "X-Big: " + "b".repeat(5000) + "\r\nContent-Length: "
                        + BODY.length() + "\r\n\r\n" + BODY, 431, "headers_too_large", "headers_too_large"),
                new Case("too many headers", many + "Content-Length: " + BODY.length() + "\r\n\r\n" + BODY,
                        431, "too_many_headers", "too_many_headers"),
                new Case("Content-Length and Transfer-Encoding", post + "Content-Length: " + BODY.length()
                        + "\r\n" + chunked.substring(post.length()), 400, "bad_framing", "bad_framing"),
                new Case("two different Content-Length", post + "Content-Length: " + BODY.length() + "\r\nContent-Length: 5\r\n\r\n"
                        + BODY, 400, "bad_framing", "bad_framing"),
                new Case("two equal Content-Length", post + "Content-Length: " + BODY.length() + "\r\nContent-Length: "
                        + BODY.length() + "\r\n\r\n" + BODY, 400, "bad_framing", "bad_framing"),
                new Case("a Content-Length list", post + "Content-Length: " + BODY.length() + ", " + BODY.length()
                        + "\r\n\r\n" + BODY, 400, "bad_framing", "bad_framing"),
                new Case("invalid chunk size", post + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + BODY + "\r\n0\r\n\r\n",
                        400, "bad_framing", "bad_framing"),
                new Case("Transfer-Encoding gzip, chunked", post + "Transfer-Encoding: gzip, chunked\r\n\r\n"
                        + chunked.substring(chunked.indexOf("\r\n\r\n") + 4), 400, "bad_framing", "bad_framing"),
                new Case("Transfer-Encoding written twice", post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + chunked.substring(chunked.indexOf("\r\n\r\n") + 4), 400, "bad_framing", "bad_framing"),
                new Case("obs-fold header", post + "X-Folded: a\r\n b\r\nContent-Length: " + BODY.length() + "\r\n\r\n" + BODY,
                        400, "bad_framing", "bad_framing"),
                new Case("bare LF in the headers", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\nContent-Type: application/json\r\n"
                        + "Content-Length: " + BODY.length() + "\r\n\r\n" + BODY, 400, "bad_framing", "bad_framing"),
                new Case("bare LF after the request line", "POST /v1/chat/completions HTTP/1.1\nHost: x\r\n"
                        + "Content-Length: " + BODY.length() + "\r\n\r\n" + BODY, 400, "bad_framing", "bad_framing"),
        };
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusals")
    void ambiguousOrOversizedRequestsAreRefusedAndTheConnectionClosed(Case c) throws Exception {
        double before = bed.metric("sluice_http_rejections_total{reason=\"" + c.reason() + "\"}");
        try (Socket s = connect()) {
            s.getOutputStream().write(c.request().getBytes(StandardCharsets.ISO_8859_1));
            String answer = readToEof(s);
            assertRefusal(answer, c.status(), c.code());
        }
        assertThat(bed.metric("sluice_http_rejections_total{reason=\"" + c.reason() + "\"}")).isEqualTo(before + 1);
        assertNoWorkerContacted();
        assertServesNormally();
    }

    @Test
    void aWellFramedChunkedRequestStillWorks() throws Exception {
        try (Socket s = connect()) {
            s.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + Integer.toHexString(BODY.length()) + "\r\n"
                    + BODY + "\r\n0\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            assertThat(readToEof(s)).startsWith("HTTP/1.1 200");
        }
    }

    @Test
    void headersTrickledPastTheHeaderTimeoutGet408() throws Exception {
        try (Socket s = connect()) {
            s.getOutputStream().write("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
            long t0 = System.nanoTime();
            for (int i = 0; i < 20 && !s.isInputShutdown(); i++) {
                Thread.sleep(100); // one header byte every 100 ms: the slowloris pace
                try {
                    s.getOutputStream().write('X');
                } catch (IOException closed) {
                    break;
                }
            }
            String answer = readToEof(s);
            assertRefusal(answer, 408, "header_timeout");
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(3));
        }
        assertNoWorkerContacted();
        assertServesNormally();
    }

    @Test
    void aBodyThatStopsArrivingGets408() throws Exception {
        try (Socket s = connect()) {
            s.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + BODY.length() + "\r\n\r\n" + BODY.substring(0, 10)).getBytes(StandardCharsets.US_ASCII));
            assertRefusal(readToEof(s), 408, "body_timeout");
        }
        assertNoWorkerContacted();
        assertServesNormally();
    }

    @Test
    void anIdleKeepAliveConnectionIsClosedButABusyOneIsNot() throws Exception {
        try (Socket s = connect()) {
            // 400 tokens at 5 ms: the gateway works on this request ~2 s, far past idle_timeout (800 ms)
            String slow = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":400,\"ignore_eos\":true}";
            s.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + slow.length() + "\r\n\r\n" + slow).getBytes(StandardCharsets.US_ASCII));
            String first = readOneResponse(s);
            assertThat(first).startsWith("HTTP/1.1 200");
            long idleFrom = System.nanoTime();
            // now idle: closed by the gateway after ~800 ms (the sweep adds at most a quarter of it)
            assertThat(readToEof(s)).isEmpty();
            assertThat(Duration.ofNanos(System.nanoTime() - idleFrom)).isBetween(Duration.ofMillis(700), Duration.ofMillis(3000));
        }
        assertThat(bed.metric("sluice_client_idle_closes_total")).isGreaterThanOrEqualTo(1);
    }

    private static void assertRefusal(String answer, int status, String code) throws IOException {
        assertThat(answer).startsWith("HTTP/1.1 " + status + " ");
        String head = answer.substring(0, answer.indexOf("\r\n\r\n")).toLowerCase();
        assertThat(head).contains("content-type: application/json").contains("connection: close");
        JsonNode error = JSON.readTree(answer.substring(answer.indexOf("\r\n\r\n") + 4)).get("error");
        assertThat(error.get("code").asText()).isEqualTo(code);
        assertThat(error.get("type").asText()).isEqualTo("invalid_request_error");
        assertThat(error.get("message").asText()).isNotBlank();
    }

    static void assertServesNormally() throws IOException {
        try (Socket s = connect()) {
            s.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + BODY.length() + "\r\nConnection: close\r\n\r\n" + BODY).getBytes(StandardCharsets.US_ASCII));
            String answer = readToEof(s);
            assertThat(answer).startsWith("HTTP/1.1 200");
            assertThat(answer).contains("\"choices\"");
        }
    }

    private static void assertNoWorkerContacted() {
        assertThat(bed.prefill().journal()).filteredOn(r -> r.method().equals("POST")).isEmpty();
        assertThat(bed.decode().journal()).filteredOn(r -> r.method().equals("POST")).isEmpty();
    }

    private static Socket connect() throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress("127.0.0.1", bed.port()), 5000);
        s.setSoTimeout(10_000);
        return s;
    }

    /** Everything until the gateway closes the connection (a read timeout fails the test). */
    static String readToEof(Socket s) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        InputStream in = s.getInputStream();
        byte[] buf = new byte[8192];
        try {
            int n;
            while ((n = in.read(buf)) >= 0) {
                out.write(buf, 0, n);
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the gateway did not close the connection; got: " + out, e);
        } catch (java.net.SocketException reset) {
            // a reset after the answer was read still ends the stream
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** One Content-Length framed response, leaving the connection open. */
    private static String readOneResponse(Socket s) throws IOException {
        InputStream in = s.getInputStream();
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed in a response head: " + head);
            }
            head.write(b);
        }
        String h = head.toString(StandardCharsets.ISO_8859_1);
        int at = h.toLowerCase().indexOf("content-length:");
        int length = Integer.parseInt(h.substring(at + 15, h.indexOf("\r\n", at)).trim());
        return h + new String(in.readNBytes(length), StandardCharsets.UTF_8);
    }
}
