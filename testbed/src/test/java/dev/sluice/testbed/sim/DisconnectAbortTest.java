package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * When a server aborts the request of a client that closed its connection ({@link AbortOnDisconnect}):
 * SGLang's rule (a started stream 2 s after the disconnect; otherwise the next 4 s
 * {@code is_disconnected} check, or a non-streamed request's next 50-token output), at once, or never.
 * A unified server, so that one connection is the whole request. Bounds are generous: only the
 * wrong rule (2 s instead of 4 s, at once instead of later) breaks them.
 */
class DisconnectAbortTest {
    /** ~20,000 tokens at 1,000 tokens/s: the prefill outlasts every check below. */
    private static final String LONG_PROMPT = "x".repeat(80_000);

    private static SimCluster unified(AbortOnDisconnect rule, double prefillTokensPerSecond, Duration step)
            throws Exception {
        return SimCluster.start(0, 1, 0, SimConfig.defaults().withAbortOnDisconnect(rule)
                .withPrefillTokensPerSecond(prefillTokensPerSecond).withDecodeStep(step), SimMode.UNIFIED);
    }

    /** Sends {@code body} to {@code path}, waits until the server holds it, closes: returns the send time. */
    private static long sendAndLeave(SimWorker w, String path, String body) throws Exception {
        long sent;
        try (RawHttp c = new RawHttp(w)) {
            sent = System.nanoTime();
            c.send("POST", path, body);
            assertThat(eventually(Duration.ofSeconds(5), () -> live(w) == 1)).as("the server took it").isTrue();
        }
        return sent;
    }

    private static int live(SimWorker w) {
        return w.stats().running() + w.stats().queued();
    }

    private static double secondsSince(long nanos) {
        return (System.nanoTime() - nanos) / (double) TimeUnit.SECONDS.toNanos(1);
    }

    @Test
    void sglangAbortsAStartedStreamTwoSecondsAfterTheDisconnect() throws Exception {
        try (SimCluster cluster = unified(AbortOnDisconnect.SGLANG, 1_000, Duration.ofMillis(20))) {
            UnifiedServer w = cluster.unified().get(0);
            sendAndLeave(w, "/generate", "{\"text\":\"" + LONG_PROMPT + "\",\"stream\":true}");
            long closed = System.nanoTime();
            // /generate returns its StreamingResponse at once: create_abort_task sleeps 2 s, then aborts
            assertThat(eventually(Duration.ofMillis(1_500), () -> w.stats().aborted() > 0)).isFalse();
            assertThat(eventually(Duration.ofSeconds(5), () -> w.stats().aborted() == 1)).isTrue();
            assertThat(secondsSince(closed)).isBetween(1.8, 4.0);
            assertThat(live(w)).isZero();
        }
    }

    @Test
    void sglangAbortsAWaitingNonStreamedRequestAtTheFourSecondCheck() throws Exception {
        try (SimCluster cluster = unified(AbortOnDisconnect.SGLANG, 1_000, Duration.ofMillis(20))) {
            UnifiedServer w = cluster.unified().get(0);
            long sent = sendAndLeave(w, "/generate", "{\"text\":\"" + LONG_PROMPT + "\",\"stream\":false}");
            // no output while it waits: _wait_one_response's 4 s wait_for times out, is_disconnected() -> abort
            assertThat(eventually(Duration.ofSeconds(8), () -> w.stats().aborted() == 1)).isTrue();
            assertThat(secondsSince(sent)).isBetween(3.8, 6.5);
        }
    }

    @Test
    void sglangTreatsAnOpenAiStreamBeforeItsFirstOutputLikeAWaitingRequest() throws Exception {
        try (SimCluster cluster = unified(AbortOnDisconnect.SGLANG, 1_000, Duration.ofMillis(20))) {
            UnifiedServer w = cluster.unified().get(0);
            long sent = sendAndLeave(w, "/v1/chat/completions", "{\"model\":\"sim-model\",\"stream\":true,"
                    + "\"messages\":[{\"role\":\"user\",\"content\":\"" + LONG_PROMPT + "\"}]}");
            // serving_chat kick-starts its generator before the StreamingResponse exists: the 4 s check applies
            assertThat(eventually(Duration.ofSeconds(8), () -> w.stats().aborted() == 1)).isTrue();
            assertThat(secondsSince(sent)).isBetween(3.8, 6.5);
        }
    }

    @Test
    void sglangAbortsADecodingNonStreamedRequestAtItsFiftiethToken() throws Exception {
        try (SimCluster cluster = unified(AbortOnDisconnect.SGLANG, 100_000, Duration.ofMillis(40))) {
            UnifiedServer w = cluster.unified().get(0);
            long sent = sendAndLeave(w, "/generate",
                    "{\"text\":\"short\",\"stream\":false,\"sampling_params\":{\"max_new_tokens\":1000}}");
            // the 50th token (~2 s) is an intermediate output: "type 3" checks is_disconnected() there,
            // before the 4 s timer would fire
            assertThat(eventually(Duration.ofSeconds(8), () -> w.stats().aborted() == 1)).isTrue();
            assertThat(secondsSince(sent)).isBetween(1.5, 3.7);
        }
    }

    @Test
    void neverLetsTheRequestRunToItsEnd() throws Exception {
        try (SimCluster cluster = unified(AbortOnDisconnect.NEVER, 100_000, Duration.ofMillis(2))) {
            UnifiedServer w = cluster.unified().get(0);
            sendAndLeave(w, "/generate",
                    "{\"text\":\"short\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":300}}");
            assertThat(eventually(Duration.ofSeconds(10), () -> w.stats().completed() == 1)).isTrue();
            assertThat(w.stats().aborted()).isZero();
        }
    }

    @Test
    void immediateAbortsAtTheDisconnect() throws Exception {
        try (SimCluster cluster = unified(AbortOnDisconnect.IMMEDIATE, 1_000, Duration.ofMillis(20))) {
            UnifiedServer w = cluster.unified().get(0);
            sendAndLeave(w, "/generate", "{\"text\":\"" + LONG_PROMPT + "\",\"stream\":false}");
            long closed = System.nanoTime();
            assertThat(eventually(Duration.ofSeconds(5), () -> w.stats().aborted() == 1)).isTrue();
            assertThat(secondsSince(closed)).isLessThan(1.5);
        }
    }

    @Test
    void theRuleParsesFromTheCommandLineNames() {
        assertThat(AbortOnDisconnect.parse("sglang")).isEqualTo(AbortOnDisconnect.SGLANG);
        assertThat(AbortOnDisconnect.parse("NEVER")).isEqualTo(AbortOnDisconnect.NEVER);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> AbortOnDisconnect.parse("later"))
                .hasMessage("abortOnDisconnect: later (expected: sglang, immediate or never)");
    }
}
