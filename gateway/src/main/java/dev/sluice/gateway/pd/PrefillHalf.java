package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.upstream.UpstreamFailure;
import dev.sluice.gateway.upstream.UpstreamCall;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The prefill half: its response is read and discarded, except for the input logprobs when the
 * client asked for them, and except that its failure (before the first token) fails the request
 * and aborts the decode at once instead of leaving it to wait for KV that will never come.
 */
final class PrefillHalf extends BufferedPrefillHalf {
    private static final Logger log = LoggerFactory.getLogger(PrefillHalf.class);
    private static final long INSPECT_LIMIT = 64 * 1024;

    private final SglangAttempt sglang;

    PrefillHalf(SglangAttempt at) {
        super(at, at.ex.request.logprobs() ? at.ex.pd.maxResponseBodyBytes() : INSPECT_LIMIT);
        this.sglang = at;
    }

    @Override
    UpstreamCall call() {
        return sglang.prefillCall;
    }

    @Override
    void finished(byte[] bytes) {
        if (status / 100 != 2) {
            String message = WorkerErrorBody.message(bytes);
            failed(AttemptFailure.fromStatus(ApiError.fromWorker(status, "prefill", at.prefill.name(), message),
                    at.prefill, status, message), "status");
            ex.halfEnded();
            return;
        }
        // a 2xx can still say the request failed: an error event, an abort finish (a prefill's KV transfer
        // or bootstrap failure ends its request with finish_reason abort, status 500)
        FailureScan.Found found = FailureScan.judgeAnswer(bytes, bytes.length);
        if (found != null) {
            failed(AttemptFailure.fromScan(found, at.prefill, "prefill"), found.abort() ? "abort" : "stream_error");
            ex.halfEnded();
            return;
        }
        if (ex.request.logprobs()) {
            try {
                if (body.overflowed()) {
                    throw new IOException("body larger than http.max_response_body");
                }
                at.decodeHalf.prefillLogprobsReady(LogprobMerger.fromPrefill(bytes));
            } catch (IOException e) {
                failed(AttemptFailure.malformed(ApiError.malformed("prefill", at.prefill.name(), e.getMessage()),
                        at.prefill), "malformed");
                ex.halfEnded();
                return;
            }
        }
        ex.pd.health().success(at.prefill);
        ex.prefillFinished(at);
        if (!ex.request.stream()) {
            // a non-streamed request shows no tokens; the prefill finishing is its first-token moment
            ex.firstToken();
        }
        ex.halfEnded();
    }

    @Override
    public void onFailure(UpstreamFailure failure) {
        if (done()) {
            return;
        }
        late(connectionFailed(failure));
        ex.halfEnded();
    }

    private void failed(AttemptFailure f, String kind) {
        countFailure(kind, f.error().message());
        late(f);
    }

    private void late(AttemptFailure f) {
        if (ex.pastFirstToken() && ex.request.stream()) {
            // the decode already has the KV and streams: the prefill's late failure changes nothing for the client
            log.warn("prefill failed after first token rid={} worker={} detail=\"{}\"", at.rid, at.prefill.name(),
                    f.error().message());
            ex.countAgainstWorker(f);
            return;
        }
        at.failed(f);
    }
}
