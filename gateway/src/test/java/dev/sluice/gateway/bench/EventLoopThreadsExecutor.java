package dev.sluice.gateway.bench;

import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * JMH's worker threads as Netty's {@code FastThreadLocalThread}s, like the gateway's event loops
 * ({@code -Djmh.executor=CUSTOM -Djmh.executor.class=...}). Netty 4.2's {@code Recycler} pools
 * objects (ChannelOutboundBuffer entries, pooled buffer handles) only on such threads: on JMH's
 * plain threads it allocates them anew each time, an allocation the gateway does not have.
 */
public final class EventLoopThreadsExecutor extends ThreadPoolExecutor {
    /** JVM options that make a forked benchmark run on these threads. */
    public static final String JVM_ARG_EXECUTOR = "-Djmh.executor=CUSTOM";
    public static final String JVM_ARG_CLASS = "-Djmh.executor.class=dev.sluice.gateway.bench.EventLoopThreadsExecutor";

    public EventLoopThreadsExecutor(int maxThreads, String prefix) {
        super(maxThreads, maxThreads, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
                new DefaultThreadFactory(prefix, true));
    }
}
