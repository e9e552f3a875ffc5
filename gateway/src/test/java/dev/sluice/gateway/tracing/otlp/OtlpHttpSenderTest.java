package dev.sluice.gateway.tracing.otlp;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.sdk.common.CompletableResultCode;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The https path's contract with its caller: a post given up on its timeout may still be read by
 * the JDK client, so the caller is told to let its buffer go ({@code abandoned}); a refused
 * connection reads nothing, and the buffer is kept (a collector that is down does not cost a new
 * buffer a batch). Real sockets on loopback, port 0.
 */
class OtlpHttpSenderTest {
    private static final byte[] BODY = new byte[64];

    @Test
    void aPostTheCollectorNeverAnswersIsAbandonedAndFailed() throws Exception {
        AtomicInteger abandoned = new AtomicInteger();
        // accepts the connection and says nothing: the TLS handshake never completes
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread holder = new Thread(() -> {
                try (Socket s = silent.accept()) {
                    s.getInputStream().readAllBytes(); // until the client closes
                } catch (Exception ignored) {
                    // the test ended
                }
            }, "silent-collector");
            holder.setDaemon(true);
            holder.start();
            OtlpHttpSender sender = new OtlpHttpSender("https://127.0.0.1:" + silent.getLocalPort() + "/v1/traces",
                    Map.of(), Duration.ofMillis(300));
            try {
                CompletableResultCode r = sender.post(BODY, BODY.length, abandoned::incrementAndGet);
                assertThat(r.isDone()).isTrue();
                assertThat(r.isSuccess()).isFalse();
                assertThat(r.getFailureThrowable()).isInstanceOf(HttpTimeoutException.class);
                assertThat(abandoned.get()).as("the body may still be read: let go").isEqualTo(1);
            } finally {
                sender.shutdown();
            }
        }
    }

    @Test
    void aRefusedPostKeepsItsBuffer() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        AtomicInteger abandoned = new AtomicInteger();
        OtlpHttpSender sender = new OtlpHttpSender("https://127.0.0.1:" + closedPort + "/v1/traces", Map.of(),
                Duration.ofSeconds(5));
        try {
            CompletableResultCode r = sender.post(BODY, BODY.length, abandoned::incrementAndGet);
            assertThat(r.isDone()).isTrue();
            assertThat(r.isSuccess()).isFalse();
            assertThat(r.getFailureThrowable()).isNotNull().isNotInstanceOf(HttpTimeoutException.class);
            assertThat(abandoned.get()).as("nothing reads the body any more: kept").isZero();
        } finally {
            sender.shutdown();
        }
    }
}
