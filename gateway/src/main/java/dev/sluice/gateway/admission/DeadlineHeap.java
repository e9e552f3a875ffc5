package dev.sluice.gateway.admission;

import java.util.Arrays;
import java.util.function.ToLongFunction;

/**
 * The queued tickets ordered by when their wait ends ({@link Ticket#waitDeadline}), so that an
 * expiry sweep reads only the tickets that are due instead of walking, or copying, the whole
 * queue. A binary min-heap whose tickets carry their own index ({@link Ticket#deadlineIndex}), so
 * taking one out when it is dispatched, evicted or abandoned costs O(log n), not a search. Under
 * the admission lock, like the {@link PriorityQueues} that owns it.
 */
final class DeadlineHeap {
    private Ticket[] heap = new Ticket[16];
    private int size;

    int size() {
        return size;
    }

    void add(Ticket t) {
        if (size == heap.length) {
            heap = Arrays.copyOf(heap, size * 2);
        }
        place(t, size++);
        siftUp(t.deadlineIndex);
    }

    /** The ticket whose wait ends first, or null. */
    Ticket peek() {
        return size == 0 ? null : heap[0];
    }

    /** Takes {@code t} out; false if it is not in the heap. */
    boolean remove(Ticket t) {
        int i = t.deadlineIndex;
        if (i < 0 || i >= size || heap[i] != t) {
            return false;
        }
        t.deadlineIndex = -1;
        Ticket last = heap[--size];
        heap[size] = null;
        if (i < size) {
            place(last, i);
            siftDown(i);
            siftUp(last.deadlineIndex);
        }
        return true;
    }

    /** Gives every ticket a new deadline (a reload changed queue_timeout) and restores the order. */
    void rekey(ToLongFunction<Ticket> deadline) {
        for (int i = 0; i < size; i++) {
            heap[i].waitDeadline = deadline.applyAsLong(heap[i]);
        }
        for (int i = size / 2 - 1; i >= 0; i--) {
            siftDown(i);
        }
    }

    private void siftUp(int i) {
        Ticket t = heap[i];
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            if (heap[parent].waitDeadline <= t.waitDeadline) {
                break;
            }
            place(heap[parent], i);
            i = parent;
        }
        place(t, i);
    }

    private void siftDown(int i) {
        Ticket t = heap[i];
        int half = size >>> 1;
        while (i < half) {
            int child = 2 * i + 1;
            if (child + 1 < size && heap[child + 1].waitDeadline < heap[child].waitDeadline) {
                child++;
            }
            if (t.waitDeadline <= heap[child].waitDeadline) {
                break;
            }
            place(heap[child], i);
            i = child;
        }
        place(t, i);
    }

    private void place(Ticket t, int i) {
        heap[i] = t;
        t.deadlineIndex = i;
    }
}
