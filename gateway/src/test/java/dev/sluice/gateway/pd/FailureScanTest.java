package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The shapes are the real servers' (docs/compatibility.md rows 4-6): SGLang's /generate stream
 * reports a ValueError as a code-less error event inside a 200, and ends an aborted request with
 * meta_info.finish_reason {"type": "abort", "status_code", "message"}.
 */
class FailureScanTest {

    private static ByteBuf buf(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
    }

    private static FailureScan.Found feedAll(FailureScan scan, String... chunks) {
        FailureScan.Found found = null;
        for (String c : chunks) {
            ByteBuf b = buf(c);
            FailureScan.Found f = scan.feed(b);
            b.release();
            if (found == null) {
                found = f;
            }
        }
        return found;
    }

    @Test
    void normalTokenStreamHasNoFailure() {
        FailureScan scan = new FailureScan();
        assertThat(feedAll(scan, "data: {\"text\":\"the error was \\\"abort\\\"\",\"meta_info\":{\"id\":\"x\","
                + "\"finish_reason\":null}}\n\n", "data: {\"text\":\"error\",\"meta_info\":{\"finish_reason\":"
                + "{\"type\":\"stop\",\"matched\":2}}}\n\n", "data: [DONE]\n\n")).isNull();
    }

    @Test
    void codeLessErrorEventIsTheClientsBadRequest() {
        FailureScan.Found f = feedAll(new FailureScan(), "data: {\"error\": {\"message\": \"The input (140000 tokens) "
                + "is longer than the model's context length (131072 tokens).\"}}\n\n", "data: [DONE]\n\n");
        assertThat(f).isNotNull();
        assertThat(f.status()).isEqualTo(400);
        assertThat(f.abort()).isFalse();
        assertThat(f.message()).contains("context length");
    }

    @Test
    void errorEventWithCodeKeepsIt() {
        FailureScan.Found f = feedAll(new FailureScan(), "data: {\"error\": {\"message\": \"m\", \"type\": "
                + "\"invalid_request_error\", \"code\": 503, \"retryable\": false}}\n\n");
        assertThat(f.status()).isEqualTo(503);
    }

    @Test
    void abortFinishCarriesStatusAndMessage() {
        FailureScan.Found f = feedAll(new FailureScan(), "data: {\"text\":\"a\",\"meta_info\":{\"finish_reason\":null}}\n\n",
                "data: {\"text\":\"a\",\"meta_info\":{\"id\":\"r\",\"finish_reason\":{\"type\":\"abort\",\"message\":"
                        + "\"Decode transfer failed for request rank=0 decode_req.req.rid='r'\",\"status_code\":500,"
                        + "\"err_type\":null}}}\n\n");
        assertThat(f.abort()).isTrue();
        assertThat(f.status()).isEqualTo(500);
        assertThat(f.message()).startsWith("Decode transfer failed");
    }

    @Test
    void eventCutAcrossChunksIsJudgedWhole() {
        String event = "data: {\"meta_info\":{\"finish_reason\":{\"type\":\"abort\",\"message\":\"The request queue is "
                + "full.\",\"status_code\":503}}}\n\n";
        for (int cut = 1; cut < event.length() - 1; cut++) {
            FailureScan.Found f = feedAll(new FailureScan(), "data: {\"text\":\"x\"}\n\n" + event.substring(0, cut),
                    event.substring(cut));
            assertThat(f).as("cut at %d", cut).isNotNull();
            assertThat(f.status()).isEqualTo(503);
        }
    }

    @Test
    void openAiChoiceAbortIsAnAbortOfUnknownStatus() {
        FailureScan.Found f = feedAll(new FailureScan(), "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},"
                + "\"finish_reason\":\"abort\"}]}\n\n");
        assertThat(f.abort()).isTrue();
        assertThat(f.status()).isZero();
    }

    @Test
    void wholeAnswersAreJudgedToo() {
        byte[] ok = "{\"text\":\"error\",\"meta_info\":{\"finish_reason\":{\"type\":\"length\",\"length\":5}}}"
                .getBytes(StandardCharsets.UTF_8);
        assertThat(FailureScan.judgeAnswer(ok, ok.length)).isNull();
        byte[] aborted = ("[{\"text\":\"\",\"meta_info\":{\"finish_reason\":{\"type\":\"abort\",\"message\":\"Aborted by "
                + "AbortReq.\",\"status_code\":null}}}]").getBytes(StandardCharsets.UTF_8);
        FailureScan.Found f = FailureScan.judgeAnswer(aborted, aborted.length);
        assertThat(f.abort()).isTrue();
        assertThat(f.status()).isZero();
        byte[] stream = ("data: {\"text\":\"t\"}\n\ndata: {\"meta_info\":{\"finish_reason\":{\"type\":\"abort\","
                + "\"message\":\"Prefill transfer failed for request rank=0\",\"status_code\":500}}}\n\ndata: [DONE]\n\n")
                .getBytes(StandardCharsets.UTF_8);
        assertThat(FailureScan.judgeAnswer(stream, stream.length).message()).startsWith("Prefill transfer failed");
    }

    @Test
    void failuresMapToTheRightCulprit() {
        var w = new dev.sluice.gateway.routing.Worker(dev.sluice.gateway.routing.WorkerRole.DECODE,
                new dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint("http://127.0.0.1:1", "127.0.0.1", 1, null,
                        java.util.Optional.empty()));
        AttemptFailure client = AttemptFailure.fromScan(new FailureScan.Found(400, "too long", false), w, "decode");
        assertThat(client.culprit()).isNull();
        assertThat(client.retryReason()).isNull();
        assertThat(client.error().status().code()).isEqualTo(400);
        AttemptFailure kv = AttemptFailure.fromScan(new FailureScan.Found(500, "Decode transfer failed for request "
                + "rank=0", true), w, "decode");
        assertThat(kv.culprit()).isSameAs(w);
        assertThat(kv.kind()).isEqualTo(dev.sluice.gateway.health.FailureKind.KV_TRANSFER);
        AttemptFailure nixl = AttemptFailure.fromScan(new FailureScan.Found(0, "... with exception NIXL KVReceiver "
                + "Exception", true), w, "decode");
        assertThat(nixl.kind()).isEqualTo(dev.sluice.gateway.health.FailureKind.KV_TRANSFER);
        AttemptFailure queueFull = AttemptFailure.fromScan(new FailureScan.Found(503, "The request queue is full.",
                true), w, "decode");
        assertThat(queueFull.kind()).isNull();
        assertThat(queueFull.retryReason()).isEqualTo(RetryReason.WORKER_BUSY);
        AttemptFailure unknown = AttemptFailure.fromScan(new FailureScan.Found(0, "Aborted by AbortReq.", true), w,
                "decode");
        assertThat(unknown.culprit()).isNull();
        assertThat(unknown.retryReason()).isEqualTo(RetryReason.WORKER_ABORTED);
    }
}
