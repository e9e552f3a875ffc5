package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import java.io.IOException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * SGLang's prefill half: its response is read and discarded, except for the input logprobs when
 * the client asked for them, and except that its failure (before the first token) fails the
 * attempt and aborts the decode at once instead of leaving it to wait for KV that will never come.
 * A failure found in the answer ends the judgement: a failed prefill is never also a success.
 */
final class PrefillHalf extends BufferedPrefillHalf {
    private static final Logger log = LoggerFactory.getLogger(PrefillHalf.class);
    private static final long INSPECT_LIMIT = 64 * 1024;

    /** Where the prefill's input logprobs go (the decode half merges them into the client's answer). */
    private final Consumer<LogprobMerger> logprobsReady;

    PrefillHalf(Attempt at, Consumer<LogprobMerger> logprobsReady) {
        super(at, at.scope.request().logprobs() ? at.scope.services().maxResponseBodyBytes() : INSPECT_LIMIT);
        this.logprobsReady = logprobsReady;
    }

    @Override
    void finished(byte[] bytes) {
        AttemptFailure f = judge(bytes);
        if (f != null) {
            failed(f);
            return;
        }
        scope.events().prefillSucceeded(at.key);
    }

    /** The failure this answer reports, or null for a prefill that did its part (logprobs handed on). */
    private AttemptFailure judge(byte[] bytes) {
        if (status / 100 != 2) {
            String message = WorkerErrorBody.message(bytes);
            countFailure("status", message);
            return AttemptFailure.fromStatus(ApiError.fromWorker(status, "prefill", at.prefill.name(), message),
                    at.prefill, status, message);
        }
        // a 2xx can still say the request failed: an error event, an abort finish (a prefill's KV transfer
        // or bootstrap failure ends its request with finish_reason abort, status 500)
        FailureScan.Found found = FailureScan.judgeAnswer(bytes, bytes.length);
        if (found != null) {
            countFailure(found.abort() ? "abort" : "stream_error", found.message());
            return AttemptFailure.fromScan(found, at.prefill, "prefill");
        }
        if (scope.request().logprobs()) {
            try {
                if (body.overflowed()) {
                    throw new IOException("body larger than http.max_response_body");
                }
                logprobsReady.accept(LogprobMerger.fromPrefill(bytes));
            } catch (IOException e) {
                countFailure("malformed", "");
                return AttemptFailure.malformed(ApiError.malformed("prefill", at.prefill.name(), e.getMessage()),
                        at.prefill);
            }
        }
        return null;
    }

    @Override
    void failed(AttemptFailure f) {
        if (scope.events().pastFirstToken(at.key) && scope.request().stream()) {
            // the decode already has the KV and streams: the prefill's late failure changes nothing for the client
            log.warn("prefill failed after first token rid={} worker={} detail=\"{}\"", at.rid, at.prefill.name(),
                    f.error().message());
            scope.events().failedAfterCommit(at.key, f);
            return;
        }
        at.failed(f);
    }
}
