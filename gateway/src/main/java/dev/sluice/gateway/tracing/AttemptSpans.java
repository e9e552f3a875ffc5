package dev.sluice.gateway.tracing;

import io.opentelemetry.api.trace.StatusCode;

/** The open spans of one attempt's calls to its workers, as {@link RequestTrace} keeps them. */
final class AttemptSpans {
    final Object key;
    final int number;
    RecordedSpan prefill;
    RecordedSpan decode;
    RecordedSpan handoff;

    AttemptSpans(Object key, int number) {
        this.key = key;
        this.number = number;
    }

    /** The attempt is stopped ({@code cause}): each call still open gets its own abort event and ends. */
    void abort(String cause) {
        prefill = abort(prefill, cause);
        decode = abort(decode, cause);
        handoff = abort(handoff, cause);
    }

    private static RecordedSpan abort(RecordedSpan s, String cause) {
        if (s != null) {
            s.event("abort", SpanKeys.ABORT_CAUSE, cause);
            s.status(StatusCode.ERROR, "aborted: " + cause);
            s.end();
        }
        return null;
    }

    /** The request ended: whatever of this attempt is still open ends now. */
    void endOpen() {
        end(prefill);
        end(decode);
        end(handoff);
    }

    private static void end(RecordedSpan s) { // one at a time: no array made a request for it
        if (s != null) {
            s.end();
        }
    }
}
