package dev.sluice.testbed.load;

import java.util.ArrayDeque;

/** At most {@code limit} sends in flight (0 = no limit); the rest start, in order, as others end. */
final class Limiter {
    private final int limit;
    private final ArrayDeque<Runnable> waiting = new ArrayDeque<>();
    private int inUse;

    Limiter(int limit) {
        this.limit = limit;
    }

    void submit(Runnable send) {
        synchronized (this) {
            if (limit > 0 && inUse >= limit) {
                waiting.addLast(send);
                return;
            }
            inUse++;
        }
        send.run();
    }

    void release() {
        Runnable next;
        synchronized (this) {
            next = waiting.pollFirst();
            if (next == null) {
                inUse--;
                return;
            }
        }
        next.run();
    }
}
