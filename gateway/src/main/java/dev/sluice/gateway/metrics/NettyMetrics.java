package dev.sluice.gateway.metrics;

import io.micrometer.core.instrument.Gauge;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.SingleThreadEventExecutor;
import io.netty.util.internal.PlatformDependent;

/** Netty's own memory and each event loop's backlog: the first things to look at when latency creeps. */
final class NettyMetrics {
    private NettyMetrics() {
    }

    static void bind(io.micrometer.core.instrument.MeterRegistry registry, EventLoopGroup loops) {
        Gauge.builder("sluice.netty.direct.memory.used", PlatformDependent::usedDirectMemory).baseUnit("bytes")
                .description("direct memory Netty has reserved (-1 when not tracked)").register(registry);
        // the allocator the channels use (Netty 4.2: the adaptive one), not PooledByteBufAllocator.DEFAULT
        io.netty.buffer.ByteBufAllocatorMetric alloc = io.netty.buffer.ByteBufAllocator.DEFAULT
                instanceof io.netty.buffer.ByteBufAllocatorMetricProvider p ? p.metric() : null;
        Gauge.builder("sluice.netty.pooled.memory", () -> alloc == null ? Double.NaN : alloc.usedDirectMemory())
                .baseUnit("bytes").tag("type", "direct").description("memory held by Netty's buffer allocator")
                .register(registry);
        Gauge.builder("sluice.netty.pooled.memory", () -> alloc == null ? Double.NaN : alloc.usedHeapMemory())
                .baseUnit("bytes").tag("type", "heap").description("memory held by Netty's buffer allocator")
                .register(registry);
        int i = 0;
        for (EventExecutor e : loops) {
            if (e instanceof SingleThreadEventExecutor loop) {
                Gauge.builder("sluice.event.loop.pending.tasks", loop, SingleThreadEventExecutor::pendingTasks)
                        .tag("loop", "io-" + i).description("tasks waiting on the event loop").register(registry);
            }
            i++;
        }
    }
}
