package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.gateway.testing.RawHttpClient;
import dev.sluice.testbed.sim.SimConfig;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A client that reads slowly must not make the gateway buffer the response: the decode is read
 * only as fast as the client drains. Asserted on bytes buffered, never on time.
 */
class SlowClientBackpressureEndToEndTest {
    private static final int RESPONSE_TOKENS = 60_000;
    private static PdTestbed bed;

    @BeforeAll
    static void start() throws Exception {
        // decode step zero: the simulated decode emits as fast as its socket takes bytes
        bed = PdTestbed.start(SimConfig.defaults().withDecodeStep(Duration.ZERO),
                "{connect: 2s, first_token: 20s, idle_stream: 20s}");
    }

    @AfterAll
    static void stop() throws Exception {
        bed.close();
    }

    @Test
    void aSlowReaderKeepsTheGatewaysBufferBoundedWhateverTheResponseLength() throws Exception {
        long total = 0;
        try (RawHttpClient client = new RawHttpClient(bed.port(), 16 * 1024)) {
            client.post("/v1/completions", "{\"model\":\"sim-model\",\"prompt\":\"go\",\"stream\":true,\"max_tokens\":"
                    + RESPONSE_TOKENS + "}");
            byte[] buf = new byte[8192];
            String tail = "";
            while (!tail.contains("data: [DONE]")) {
                int n = client.readSome(buf, 4096);
                if (n < 0) {
                    break;
                }
                total += n;
                String text = tail + client.text();
                tail = text.substring(Math.max(0, text.length() - 64));
                client.forget();
                client.readSomeLater();
            }
            assertThat(tail).contains("data: [DONE]");
        }
        double highWater = bed.metric("sluice_client_write_buffer_high_water_bytes");
        assertThat(total).as("response length").isGreaterThan(8L << 20);
        // 128 KiB high watermark plus the chunk that crossed it; without backpressure this is megabytes
        assertThat(highWater).as("bytes the gateway held for the slow client").isPositive().isLessThan(512 * 1024);
        assertThat(highWater).isLessThan(total / 16.0);
    }
}
