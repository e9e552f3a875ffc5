package dev.sluice.gateway.tracing;

import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Where the gateway's spans come from and where they go when they end: the resource (service.name)
 * and instrumentation scope every span carries, and the consumer of ended spans (the export queue;
 * a list in tests). Holds no state of its own: any event loop may use it.
 */
public final class SpanRecorder {
    static final String SCOPE = "dev.sluice.gateway";
    private final Resource resource;
    private final InstrumentationScopeInfo scope;
    private final Consumer<RecordedSpan> ended;

    public SpanRecorder(Resource resource, Consumer<RecordedSpan> ended) {
        this.resource = Objects.requireNonNull(resource, "resource");
        this.scope = InstrumentationScopeInfo.create(SCOPE);
        this.ended = Objects.requireNonNull(ended, "ended");
    }

    Resource resource() {
        return resource;
    }

    InstrumentationScopeInfo scope() {
        return scope;
    }

    void ended(RecordedSpan span) {
        ended.accept(span);
    }
}
