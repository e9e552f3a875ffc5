package dev.sluice.testbed.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/**
 * Fails the build when Netty's leak detector reports a leak (Netty's own {@code -Pleak} idea,
 * Zuul's CustomLeakDetector). Installed as a launcher session listener, i.e. before any test
 * class loads a ByteBuf class; checked after every test class, which then fails with the leak's
 * access records.
 */
public final class LeakGuard implements LauncherSessionListener, AfterAllCallback {
    private static final List<String> LEAKS = new CopyOnWriteArrayList<>();
    private static volatile boolean installed;

    @Override
    public void launcherSessionOpened(LauncherSession session) {
        install();
    }

    static synchronized void install() {
        if (installed) {
            return;
        }
        installed = true;
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new ResourceLeakDetectorFactory() {
            @Override
            @SuppressWarnings("deprecation")
            public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval,
                                                                       long maxActive) {
                return new ResourceLeakDetector<T>(resource, samplingInterval, maxActive) {
                    @Override
                    protected boolean needReport() {
                        return true;
                    }

                    @Override
                    protected void reportTracedLeak(String resourceType, String records) {
                        LEAKS.add(resourceType + " leaked:" + records);
                        super.reportTracedLeak(resourceType, records);
                    }

                    @Override
                    protected void reportUntracedLeak(String resourceType) {
                        LEAKS.add(resourceType + " leaked (no records)");
                        super.reportUntracedLeak(resourceType);
                    }
                };
            }
        });
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        // Leaks are reported when a collected, unreleased buffer is noticed by a later allocation.
        for (int round = 0; round < 3; round++) {
            System.gc();
            // best effort, not a synchronisation: gives the collector time to enqueue unreachable buffers,
            // which the allocations below then report; no event says that has happened
            Thread.sleep(50);
            List<ByteBuf> bufs = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                bufs.add(PooledByteBufAllocator.DEFAULT.directBuffer(16));
                bufs.add(UnpooledByteBufAllocator.DEFAULT.heapBuffer(16));
            }
            bufs.forEach(ByteBuf::release);
        }
        if (!LEAKS.isEmpty()) {
            List<String> found = new ArrayList<>(LEAKS);
            LEAKS.clear();
            throw new AssertionError("Netty reported " + found.size() + " leak(s) during "
                    + context.getDisplayName() + ":\n" + String.join("\n---\n", found));
        }
    }
}
