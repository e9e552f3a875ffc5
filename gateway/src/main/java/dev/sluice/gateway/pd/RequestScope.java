package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.tracing.RequestTrace;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.EventLoop;

/**
 * What every attempt at one request shares: the client's request, the event loop everything runs
 * on, the client's response, the services to reach workers, and where to report
 * ({@link AttemptEvents}), and the request's trace (its worker calls are spans, named in their
 * traceparent). Attempts see the request through this and nothing else.
 */
record RequestScope(GenerationRequest request, EventLoop loop, ByteBufAllocator alloc, ClientSink client,
                    AttemptServices services, AttemptEvents events, RequestTrace trace) {

    /** Untraced (the gateway's own probes, tests). */
    RequestScope(GenerationRequest request, EventLoop loop, ByteBufAllocator alloc, ClientSink client,
                 AttemptServices services, AttemptEvents events) {
        this(request, loop, alloc, client, services, events, RequestTrace.NONE);
    }
}
