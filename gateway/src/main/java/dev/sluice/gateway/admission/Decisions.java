package dev.sluice.gateway.admission;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The admission lock, and the rule that comes with it: a decision runs under the lock and only
 * collects what it has to tell (grants, rejections, observer calls); that runs after the lock is
 * released, in the order collected. So no listener ever runs under the lock or can re-enter the
 * controller while it is held, and the lock is held for bookkeeping only.
 */
final class Decisions {
    /** A decision made under the lock; it leaves what must run after unlocking in {@code after}. */
    @FunctionalInterface
    interface Decision<T> {
        T decide(After after);
    }

    /** What a decision leaves to run once the lock is released. */
    static final class After {
        private List<Runnable> actions;

        void add(Runnable action) {
            if (actions == null) {
                actions = new ArrayList<>(2);
            }
            actions.add(action);
        }

        private void run() {
            if (actions != null) {
                actions.forEach(Runnable::run);
            }
        }
    }

    private final ReentrantLock lock = new ReentrantLock();

    /** Runs {@code decision} under the lock, then what it left, and returns its answer. */
    <T> T decide(Decision<T> decision) {
        After after = new After();
        T answer;
        lock.lock();
        try {
            answer = decision.decide(after);
        } finally {
            lock.unlock();
        }
        after.run();
        return answer;
    }

    /** A decision with no answer but what it leaves to run. */
    void act(Consumer<After> decision) {
        decide(after -> {
            decision.accept(after);
            return null;
        });
    }

    /** Reads (or changes) state under the lock when there is nothing to tell anyone. */
    <T> T read(Supplier<T> read) {
        lock.lock();
        try {
            return read.get();
        } finally {
            lock.unlock();
        }
    }

    /** As {@link #read}, with nothing to return. */
    void update(Runnable update) {
        lock.lock();
        try {
            update.run();
        } finally {
            lock.unlock();
        }
    }
}
