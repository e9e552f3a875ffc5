package dev.sluice.gateway.tracing;

import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Where the gateway's spans come from and where they go when they end: the resource (service.name)
 * and instrumentation scope every span carries, and the consumer of ended spans (the export queue;
 * a list in tests). Any event loop may use it. The consumer can be {@link #redirect}ed once, when the
 * export a reload replaced stops: the spans its requests still end are then only counted.
 */
public final class SpanRecorder {
    static final String SCOPE = "dev.sluice.gateway";
    private final Resource resource;
    private final InstrumentationScopeInfo scope;
    private volatile Consumer<RecordedSpan> ended;

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

    /** From now on ended spans go to {@code to} (the export they went to has stopped). */
    void redirect(Consumer<RecordedSpan> to) {
        ended = Objects.requireNonNull(to, "to");
    }

    void ended(RecordedSpan span) {
        ended.accept(span);
    }
}
