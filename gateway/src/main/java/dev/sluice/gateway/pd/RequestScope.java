package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.GenerationRequest;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.EventLoop;

/**
 * What every attempt at one request shares: the client's request, the event loop everything runs
 * on, the client's response, the services to reach workers, and where to report
 * ({@link AttemptEvents}). Attempts see the request through this and nothing else.
 */
record RequestScope(GenerationRequest request, EventLoop loop, ByteBufAllocator alloc, ClientSink client,
                    AttemptServices services, AttemptEvents events) {
}
