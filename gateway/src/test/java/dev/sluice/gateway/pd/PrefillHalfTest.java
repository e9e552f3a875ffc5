package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.api.GenerationRoute;
import dev.sluice.gateway.health.FailureKind;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * SGLang's prefill half driven directly: its answer is read whole and judged once. The review's
 * bug: after reporting a failure found in the answer (an error event in a 2xx, malformed logprobs)
 * the judgement fell through to success, so a failed prefill was also reported as
 * {@code prefillSucceeded} (its worker credited, the prompt no longer counted as pending).
 */
class PrefillHalfTest {
    private AttemptHarness h;
    private Worker prefill;
    private Worker decode;
    private SglangAttempt at;
    private PrefillHalf half;

    @BeforeEach
    void setUp() {
        h = AttemptHarness.embedded();
        prefill = AttemptHarness.worker(WorkerRole.PREFILL, AttemptHarness.NOWHERE, 8998);
        decode = AttemptHarness.worker(WorkerRole.DECODE, AttemptHarness.NOWHERE, null);
    }

    @AfterEach
    void tearDown() throws Exception {
        // the prefill's answer never reaches the client
        assertThat(h.received().headSeen).isFalse();
        h.close();
        assertThat(prefill.inflight()).isZero();
        h.assertAllReleased();
    }

    private void start(String json) {
        at = new SglangAttempt(h.scope(GenerationRoute.GENERATE, json), new AttemptKey("rid-1", prefill, decode));
        half = new PrefillHalf(at, logprobs -> { });
        prefill.acquired(); // what PdHalf.start does
    }

    private void answer(int status, String contentType, String body) {
        half.onResponseHead(AttemptHarness.head(status, contentType));
        int mid = body.length() / 2; // in two pieces: the half reads the answer whole before judging it
        half.onContent(h.chunk(body.substring(0, mid)));
        assertThat(h.events.calls()).as("nothing judged before the answer is complete").isEmpty();
        half.onContent(h.last(body.substring(mid)));
    }

    @Test
    void aGoodAnswerIsExactlyOneSuccess() {
        start("{\"text\":\"hi\"}");
        answer(200, "application/json", "{\"text\":\"\",\"meta_info\":{\"id\":\"rid-1\",\"prompt_tokens\":3,"
                + "\"finish_reason\":{\"type\":\"length\",\"length\":1}}}");
        assertThat(h.events.names()).containsExactly("prefillSucceeded", "partEnded");
    }

    @Test
    void anErrorEventInA200StreamIsAFailureAndNeverASuccess() {
        start("{\"text\":\"hi\",\"stream\":true}");
        answer(200, "text/event-stream", "data: {\"error\": {\"message\": \"min_new_tokens must be in [0, "
                + "max_new_tokens]\"}}\n\ndata: [DONE]\n\n");
        assertThat(h.events.names()).containsExactly("failed", "partEnded");
        AttemptFailure f = h.events.failures("failed").get(0);
        assertThat(f.error().status().code()).isEqualTo(400);
        assertThat(f.culprit()).as("a code-less error event is the client's").isNull();
    }

    @Test
    void aKvAbortFinishInA200IsThePrefillsFailureAndNeverASuccess() {
        start("{\"text\":\"hi\"}");
        answer(200, "application/json", "{\"text\":\"\",\"meta_info\":{\"id\":\"rid-1\",\"finish_reason\":{\"type\":"
                + "\"abort\",\"status_code\":500,\"message\":\"Prefill transfer failed for request rank=0 "
                + "req.rid='rid-1'\"}}}");
        assertThat(h.events.names()).containsExactly("failed", "partEnded");
        AttemptFailure f = h.events.failures("failed").get(0);
        assertThat(f.culprit()).isSameAs(prefill);
        assertThat(f.kind()).isEqualTo(FailureKind.KV_TRANSFER);
        assertThat(f.retryReason()).isEqualTo(RetryReason.KV_TRANSFER);
    }

    @Test
    void malformedLogprobsAreAFailureAndNeverASuccess() {
        start("{\"text\":\"hi\",\"return_logprob\":true}");
        answer(200, "application/json", "[not json at all]");
        assertThat(h.events.names()).containsExactly("failed", "partEnded");
        AttemptFailure f = h.events.failures("failed").get(0);
        assertThat(f.culprit()).isSameAs(prefill);
        assertThat(f.kind()).isEqualTo(FailureKind.SERVER_ERROR);
        assertThat(f.retryReason()).as("it may have done the work: not retried").isNull();
    }

    @Test
    void anErrorStatusIsThePrefillsFailure() {
        start("{\"text\":\"hi\"}");
        answer(500, "application/json", "{\"object\":\"error\",\"message\":\"Internal server error\",\"code\":500}");
        assertThat(h.events.names()).containsExactly("failed", "partEnded");
        AttemptFailure f = h.events.failures("failed").get(0);
        assertThat(f.culprit()).isSameAs(prefill);
        assertThat(f.error().status().code()).isEqualTo(500);
    }

    @Test
    void aFailureAfterTheFirstTokenOfAStreamIsOnlyCountedAfterCommit() {
        start("{\"text\":\"hi\",\"stream\":true}");
        h.events.markPastFirstToken(at); // the decode already streams to the client
        answer(200, "text/event-stream", "data: {\"text\":\"\",\"meta_info\":{\"finish_reason\":{\"type\":\"abort\","
                + "\"status_code\":500,\"message\":\"Prefill transfer failed for request rid-1\"}}}\n\n");
        assertThat(h.events.names()).containsExactly("failedAfterCommit", "partEnded");
        assertThat(h.events.failures("failedAfterCommit").get(0).culprit()).isSameAs(prefill);
    }

    @Test
    void aNonStreamedRequestsPrefillFailureAfterTheFirstTokenStillFailsTheAttempt() {
        // nothing reached the client of a non-streamed request yet: it can still get an honest status
        start("{\"text\":\"hi\"}");
        h.events.markPastFirstToken(at);
        answer(502, "text/plain", "Bad Gateway");
        assertThat(h.events.names()).containsExactly("failed", "partEnded");
    }
}
