package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.api.GenerationRoute;
import dev.sluice.gateway.health.FailureKind;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The decode half driven directly with the HTTP objects the upstream codec would hand it, against a
 * recording exchange and an embedded client channel: what it reports, and what the client gets.
 * The stream shapes are SGLang's (/generate: meta_info with cumulative counts; an aborted request
 * ends with finish_reason {"type": "abort", "status_code", "message"}) and the OpenAI routes'.
 */
class DecodeHalfTest {
    private static final String SSE = "text/event-stream";
    private static final String JSON = "application/json";
    private static final String E1 = "data: {\"text\":\"Hel\",\"meta_info\":{\"id\":\"r\",\"prompt_tokens\":7,"
            + "\"completion_tokens\":1,\"finish_reason\":null}}\n\n";
    private static final String E2 = "data: {\"text\":\"Hello\",\"meta_info\":{\"id\":\"r\",\"prompt_tokens\":7,"
            + "\"completion_tokens\":2,\"finish_reason\":null}}\n\n";
    private static final String DONE = "data: [DONE]\n\n";
    /** SGLang's decode failing its KV transfer: an abort finish with status 500 inside the 200 stream. */
    private static final String KV_ABORT = "data: {\"text\":\"\",\"meta_info\":{\"id\":\"r\",\"finish_reason\":"
            + "{\"type\":\"abort\",\"status_code\":500,\"message\":\"Decode transfer failed for request r\"},"
            + "\"completion_tokens\":2}}\n\n";
    private static final String SERVER_ERROR_EVENT = "data: {\"error\": {\"message\": \"CUDA out of memory\", "
            + "\"code\": 500}}\n\n";

    private AttemptHarness h;
    private Worker decode;
    private UnifiedAttempt at;
    private DecodeHalf half;

    @BeforeEach
    void setUp() {
        h = AttemptHarness.embedded();
        decode = AttemptHarness.worker(WorkerRole.DECODE, AttemptHarness.NOWHERE, null);
    }

    private void start(GenerationRoute route, String json) {
        at = new UnifiedAttempt(h.scope(route, json), new AttemptKey("rid-1", decode, decode));
        half = new DecodeHalf(at);
        decode.acquired(); // what PdHalf.start does: the half must give the slot back exactly once when it ends
    }

    private void streamed() {
        start(GenerationRoute.GENERATE, "{\"text\":\"hi\",\"stream\":true}");
        half.onResponseHead(AttemptHarness.head(200, SSE));
    }

    @AfterEach
    void tearDown() throws Exception {
        h.close(); // reads what is left of the client's output (its buffers are then released)
        assertThat(decode.inflight()).as("decode in-flight count after the half ended").isZero();
        h.assertAllReleased();
    }

    private AttemptFailure onlyFailure() {
        assertThat(h.events.count("failedAfterCommit")).isZero();
        List<AttemptFailure> f = h.events.failures("failed");
        assertThat(f).hasSize(1);
        return f.get(0);
    }

    private AttemptFailure onlyFailureAfterCommit() {
        assertThat(h.events.count("failed")).isZero();
        List<AttemptFailure> f = h.events.failures("failedAfterCommit");
        assertThat(f).hasSize(1);
        return f.get(0);
    }

    @Test
    void aStreamIsRelayedChunkByChunkAsItComes() {
        streamed();
        half.onContent(h.chunk(E1));
        AttemptHarness.Received r = h.received();
        // committed at the first chunk, which is already on the client's wire before the next one comes
        assertThat(r.status).isEqualTo(200);
        assertThat(r.contentType).isEqualTo(SSE);
        assertThat(r.body()).isEqualTo(E1);
        assertThat(r.ended).isFalse();
        assertThat(h.events.names()).containsExactly("firstToken", "relayed");

        half.onContent(h.chunk(E2));
        assertThat(h.received().body()).isEqualTo(E1 + E2);

        half.onContent(h.last(DONE));
        r = h.received();
        assertThat(r.body()).isEqualTo(E1 + E2 + DONE);
        assertThat(r.ended).isTrue();
        assertThat(h.events.names()).containsExactly("firstToken", "relayed", "relayed", "relayed", "responseEnded");
        assertThat(h.events.ended()).isEqualTo("clean");
        assertThat(h.events.counts("completionTokens")).containsOnly(1L, 2L).endsWith(2L);
    }

    @Test
    void aFailureEventBeforeTheFirstByteFailsTheAttemptWithItsRealStatusAndCommitsNothing() {
        streamed();
        half.onContent(h.chunk(KV_ABORT));
        AttemptFailure f = onlyFailure();
        assertThat(f.error().status().code()).isEqualTo(500);
        assertThat(f.culprit()).isSameAs(decode);
        assertThat(f.kind()).isEqualTo(FailureKind.KV_TRANSFER);
        assertThat(f.retryReason()).isEqualTo(RetryReason.KV_TRANSFER);
        assertThat(h.events.names()).containsExactly("failed", "partEnded");
        assertThat(h.sink.committed()).isFalse();
        assertThat(decode.inflight()).isZero();
        // the rest of the worker's stream is dropped (and released), never relayed, never reported
        half.onContent(h.last(DONE));
        assertThat(h.received().headSeen).isFalse();
        assertThat(h.events.names()).containsExactly("failed", "partEnded");
    }

    @Test
    void aCodeLessErrorEventBeforeTheFirstByteIsTheClientsBadRequestAndBlamesNoWorker() {
        streamed();
        half.onContent(h.chunk("data: {\"error\": {\"message\": \"Requested token count exceeds the model's "
                + "maximum context length\"}}\n\n"));
        AttemptFailure f = onlyFailure();
        assertThat(f.error().status().code()).isEqualTo(400);
        assertThat(f.culprit()).isNull();
        assertThat(f.kind()).isNull();
        assertThat(f.retryReason()).isNull();
        half.onContent(h.last(DONE));
        assertThat(h.received().headSeen).isFalse();
    }

    @Test
    void aFailureAfterTheFirstByteIsRelayedAsSentCountedAfterCommitAndTheEndIsNotClean() {
        streamed();
        half.onContent(h.chunk(E1));
        half.onContent(h.chunk(SERVER_ERROR_EVENT));
        half.onContent(h.last(DONE));
        AttemptFailure f = onlyFailureAfterCommit();
        assertThat(f.culprit()).isSameAs(decode);
        assertThat(f.kind()).isEqualTo(FailureKind.SERVER_ERROR);
        AttemptHarness.Received r = h.received();
        assertThat(r.status).isEqualTo(200);
        assertThat(r.body()).isEqualTo(E1 + SERVER_ERROR_EVENT + DONE);
        assertThat(r.ended).isTrue();
        assertThat(h.events.names()).containsExactly("firstToken", "relayed", "failedAfterCommit", "relayed",
                "relayed", "responseEnded");
        assertThat(h.events.ended()).as("a stream that reported a failure is no success for health")
                .isEqualTo("unclean");
    }

    /**
     * The review's bug: the half looked only at the start of each chunk, as if every chunk were one
     * whole event. An abort finish cut in two by the network starts its second chunk with
     * {@code ort",...} and was relayed as a clean end.
     */
    @Test
    void anAbortFinishSplitAcrossTwoChunksIsFound() {
        streamed();
        int cut = KV_ABORT.indexOf("\"ab") + 3;
        half.onContent(h.chunk(E1));
        half.onContent(h.chunk(KV_ABORT.substring(0, cut)));
        assertThat(h.events.count("failedAfterCommit")).as("judged only once the event is whole").isZero();
        half.onContent(h.chunk(KV_ABORT.substring(cut)));
        half.onContent(h.last(DONE));
        AttemptFailure f = onlyFailureAfterCommit();
        assertThat(f.kind()).isEqualTo(FailureKind.KV_TRANSFER);
        assertThat(f.culprit()).isSameAs(decode);
        assertThat(h.received().body()).isEqualTo(E1 + KV_ABORT + DONE);
        assertThat(h.events.ended()).isEqualTo("unclean");
    }

    @Test
    void anErrorEventSplitInsideItsMarkerIsFound() {
        streamed();
        int cut = SERVER_ERROR_EVENT.indexOf("err") + 3; // cuts the "error" key itself
        half.onContent(h.chunk(E1));
        half.onContent(h.chunk(SERVER_ERROR_EVENT.substring(0, cut)));
        half.onContent(h.chunk(SERVER_ERROR_EVENT.substring(cut)));
        half.onContent(h.last(DONE));
        assertThat(onlyFailureAfterCommit().error().status().code()).isEqualTo(500);
        assertThat(h.events.ended()).isEqualTo("unclean");
    }

    @Test
    void aFailureEventBehindATokenEventInTheSameChunkIsFound() {
        streamed();
        half.onContent(h.chunk(E1));
        half.onContent(h.chunk(E2 + KV_ABORT));
        half.onContent(h.last(DONE));
        assertThat(onlyFailureAfterCommit().kind()).isEqualTo(FailureKind.KV_TRANSFER);
        assertThat(h.received().body()).isEqualTo(E1 + E2 + KV_ABORT + DONE);
        assertThat(h.events.ended()).isEqualTo("unclean");
    }

    @Test
    void aFirstChunkWhoseSecondEventIsAFailureFailsBeforeAnythingIsCommitted() {
        streamed();
        half.onContent(h.chunk(E1 + KV_ABORT));
        assertThat(onlyFailure().retryReason()).isEqualTo(RetryReason.KV_TRANSFER);
        half.onContent(h.last(DONE));
        assertThat(h.sink.committed()).isFalse();
        assertThat(h.received().headSeen).isFalse();
    }

    /** A count cut by a chunk boundary must be read whole, never as its first digits. */
    @Test
    void sglangTokenCountsCutByAChunkBoundaryAreReadWhole() {
        streamed();
        String first = "data: {\"text\":\"a\",\"meta_info\":{\"id\":\"r\",\"prompt_tokens\":1234,"
                + "\"completion_tokens\":1,\"finish_reason\":null}}\n\n";
        String second = "data: {\"text\":\"ab\",\"meta_info\":{\"id\":\"r\",\"prompt_tokens\":1234,"
                + "\"completion_tokens\":56,\"finish_reason\":{\"type\":\"length\",\"length\":56}}}\n\n";
        int cutPrompt = first.indexOf("1234") + 2;     // "prompt_tokens":12 | 34
        int cutCompletion = second.indexOf(":56") + 2; // "completion_tokens":5 | 6
        half.onContent(h.chunk(first.substring(0, cutPrompt)));
        half.onContent(h.chunk(first.substring(cutPrompt) + second.substring(0, cutCompletion)));
        half.onContent(h.chunk(second.substring(cutCompletion)));
        half.onContent(h.last(DONE));
        assertThat(h.events.counts("promptTokens")).isNotEmpty().containsOnly(1234L);
        assertThat(h.events.counts("completionTokens")).isNotEmpty().containsOnly(1L, 56L).endsWith(56L);
        assertThat(h.received().body()).isEqualTo(first + second + DONE);
        assertThat(h.events.ended()).isEqualTo("clean");
    }

    @Test
    void openAiUsageCutByAChunkBoundaryIsReadWhole() {
        start(GenerationRoute.CHAT_COMPLETIONS, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                + "\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
        half.onResponseHead(AttemptHarness.head(200, SSE));
        String token = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                + "\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n";
        String usage = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":"
                + "{\"prompt_tokens\":48,\"completion_tokens\":12,\"total_tokens\":60}}\n\n";
        int cut = usage.indexOf(":48") + 2;
        half.onContent(h.chunk(token + usage.substring(0, cut)));
        half.onContent(h.chunk(usage.substring(cut)));
        half.onContent(h.last(DONE));
        assertThat(h.events.counts("promptTokens")).isNotEmpty().containsOnly(48L);
        assertThat(h.events.counts("completionTokens")).isNotEmpty().containsOnly(12L);
        assertThat(h.events.ended()).isEqualTo("clean");
        assertThat(h.received().body()).isEqualTo(token + usage + DONE);
    }

    @Test
    void aWholeAnswerIsRelayedWithItsCounts() {
        start(GenerationRoute.CHAT_COMPLETIONS, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        String body = "{\"id\":\"c\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                + "\"assistant\",\"content\":\"Hello\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":48,"
                + "\"completion_tokens\":12,\"total_tokens\":60}}";
        half.onResponseHead(AttemptHarness.head(200, JSON));
        half.onContent(h.chunk(body.substring(0, 40)));
        assertThat(h.received().headSeen).as("a whole answer is checked before anything is sent").isFalse();
        half.onContent(h.last(body.substring(40)));
        AttemptHarness.Received r = h.received();
        assertThat(r.status).isEqualTo(200);
        assertThat(r.body()).isEqualTo(body);
        assertThat(r.ended).isTrue();
        assertThat(h.events.names()).containsExactly("responseEnded");
        assertThat(h.events.ended()).isEqualTo("clean");
        assertThat(h.events.counts("promptTokens")).containsExactly(48L);
        assertThat(h.events.counts("completionTokens")).containsExactly(12L);
    }

    @Test
    void aWholeAnswerWithAnAbortFinishFailsAndBlamesNobody() {
        start(GenerationRoute.GENERATE, "{\"text\":\"hi\"}");
        half.onResponseHead(AttemptHarness.head(200, JSON));
        // SGLang's answer to a request someone aborted on the worker: a 200 whose finish reason says so
        half.onContent(h.last("{\"text\":\"\",\"meta_info\":{\"id\":\"r\",\"finish_reason\":{\"type\":\"abort\","
                + "\"message\":\"Abort in waiting queue\"},\"completion_tokens\":0}}"));
        AttemptFailure f = onlyFailure();
        assertThat(f.error().status().code()).isEqualTo(502);
        assertThat(f.culprit()).isNull();
        assertThat(f.retryReason()).isEqualTo(RetryReason.WORKER_ABORTED);
        assertThat(h.events.names()).containsExactly("failed", "partEnded");
        assertThat(h.received().headSeen).isFalse();
    }

    @Test
    void aWholeOpenAiAnswerWithFinishReasonAbortFails() {
        start(GenerationRoute.COMPLETIONS, "{\"model\":\"m\",\"prompt\":\"hi\"}");
        half.onResponseHead(AttemptHarness.head(200, JSON));
        half.onContent(h.last("{\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"\","
                + "\"finish_reason\":\"abort\"}]}"));
        assertThat(onlyFailure().retryReason()).isEqualTo(RetryReason.WORKER_ABORTED);
        assertThat(h.received().headSeen).isFalse();
    }

    @Test
    void aDecode4xxIsTheClientsErrorAndBlamesNoWorker() {
        start(GenerationRoute.CHAT_COMPLETIONS, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                + "\"stream\":true}");
        half.onResponseHead(AttemptHarness.head(400, JSON));
        half.onContent(h.last("{\"object\":\"error\",\"message\":\"This model's maximum context length is 4096 "
                + "tokens.\",\"type\":\"BadRequestError\",\"code\":400}"));
        AttemptFailure f = onlyFailure();
        assertThat(f.error().status().code()).isEqualTo(400);
        assertThat(f.error().message()).contains("maximum context length");
        assertThat(f.culprit()).isNull();
        assertThat(f.kind()).isNull();
        assertThat(f.retryReason()).isNull();
        assertThat(h.received().headSeen).isFalse();
    }

    @Test
    void aQueueFull503IsRetryableLoadAndNoFault() {
        streamedHeadOnly(503);
        half.onContent(h.last("{\"object\":\"error\",\"message\":\"The request queue is full.\",\"code\":503}"));
        AttemptFailure f = onlyFailure();
        assertThat(f.error().status().code()).isEqualTo(503);
        assertThat(f.retryReason()).isEqualTo(RetryReason.WORKER_BUSY);
        assertThat(f.kind()).as("load, not sickness").isNull();
        assertThat(f.culprit()).as("still the worker the next pair avoids").isSameAs(decode);
        assertThat(h.received().headSeen).isFalse();
    }

    @Test
    void anyOther503IsRetryableButAFault() {
        streamedHeadOnly(503);
        half.onContent(h.last("{\"detail\":\"Service Unavailable\"}"));
        AttemptFailure f = onlyFailure();
        assertThat(f.retryReason()).isEqualTo(RetryReason.WORKER_BUSY);
        assertThat(f.kind()).isEqualTo(FailureKind.SERVER_ERROR);
        assertThat(f.culprit()).isSameAs(decode);
    }

    private void streamedHeadOnly(int status) {
        start(GenerationRoute.GENERATE, "{\"text\":\"hi\",\"stream\":true}");
        half.onResponseHead(AttemptHarness.head(status, JSON));
    }
}
