package dev.sluice.gateway.tracing;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;

/** The one server span of a request refused before admission ({@link Tracing#refused}). */
final class RefusalSpan {
    private RefusalSpan() {
    }

    static void record(Tracer tracer, Context parent, String method, String path, int status, String code,
                       String message) {
        var b = tracer.spanBuilder(method == null ? "refused" : method).setParent(parent).setSpanKind(SpanKind.SERVER)
                .setAttribute(SpanKeys.HTTP_STATUS, (long) status).setAttribute(SpanKeys.ERROR_TYPE, code)
                .setAttribute(SpanKeys.OUTCOME, "refused").setAttribute(SpanKeys.ERROR_MESSAGE, bounded(message));
        if (method != null) {
            b.setAttribute(SpanKeys.HTTP_METHOD, method);
        }
        if (path != null) {
            b.setAttribute(SpanKeys.URL_PATH, bounded(path)); // a client chose these bytes
        }
        Span s = b.startSpan();
        if (status >= 500) {
            s.setStatus(StatusCode.ERROR, message); // a server span's 4xx is the client's error, not its own
        }
        s.end();
    }

    private static String bounded(String s) {
        return s.length() <= 200 ? s : s.substring(0, 200) + "...";
    }
}
