package dev.sluice.gateway.tracing;

import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.trace.samplers.Sampler;

/** The one server span of a request refused before admission ({@link Tracing#refused}). */
final class RefusalSpan {
    private RefusalSpan() {
    }

    static void record(SpanRecorder recorder, Sampler sampler, Context parent, String method, String path, int status,
                       String code, String message) {
        String name = method == null ? "refused" : method;
        TraceRoot root = TraceRoot.decide(sampler, parent, name);
        if (!root.sampled()) {
            return;
        }
        RecordedSpan s = root.serverSpan(recorder, name, root.now(), 6)
                .set(SpanKeys.HTTP_STATUS, (long) status).set(SpanKeys.ERROR_TYPE, code)
                .set(SpanKeys.OUTCOME, "refused").set(SpanKeys.ERROR_MESSAGE, bounded(message));
        if (method != null) {
            s.set(SpanKeys.HTTP_METHOD, method);
        }
        if (path != null) {
            s.set(SpanKeys.URL_PATH, bounded(path)); // a client chose these bytes
        }
        if (status >= 500) {
            s.status(StatusCode.ERROR, message); // a server span's 4xx is the client's error, not its own
        }
        s.end();
    }

    private static String bounded(String s) {
        return s.length() <= 200 ? s : s.substring(0, 200) + "...";
    }
}
