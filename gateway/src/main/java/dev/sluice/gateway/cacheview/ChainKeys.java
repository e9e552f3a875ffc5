package dev.sluice.gateway.cacheview;

import java.util.concurrent.locks.StampedLock;

/**
 * A worker's cached prefixes: chain keys ({@link BlockChain}) with how many engine blocks carry
 * each (its DP ranks may store the same prefix), in two primitive arrays (key 8 bytes, count 4)
 * with open addressing at most 3/4 full: 16 bytes a key, where a
 * {@code ConcurrentHashMap<Long, Integer>} took about 60.
 *
 * <p>Threads: one writer (the subscriber's thread) changes the arrays under the write lock of a
 * {@link StampedLock}; readers (routing under the admission lock, metrics) read optimistically
 * and validate, and take the read lock only when a write overlapped. A read that overlapped a
 * write may see a half-moved table, so it never trusts what it saw without validating: its probe
 * is bounded by the table's length and reads one array reference, so it always ends, and its
 * answer is thrown away.
 */
final class ChainKeys {
    private static final int FIRST_CAPACITY = 256;

    private final StampedLock lock = new StampedLock();
    /** Slots' keys; 0 marks an empty slot (key 0 itself is counted in {@link #zeroCount}). */
    private volatile long[] keys;
    private int[] counts;
    private int zeroCount;
    /** Keys the arrays have room for at 3/4 full. */
    private int capacity;
    private volatile int size;

    ChainKeys(long limit) {
        allocate((int) Math.min(FIRST_CAPACITY, Math.max(1, limit)));
    }

    /** Exact bytes of the arrays when they have room for {@code capacity} keys. */
    static long bytesFor(long capacity) {
        int len = EngineBlockTable.indexLength(capacity);
        return ArrayBytes.longs(len) + ArrayBytes.ints(len);
    }

    long bytes() {
        return bytesFor(capacity);
    }

    /** Distinct keys held. */
    int size() {
        return size;
    }

    /** One more engine block carries {@code key}; the arrays grow up to room for {@code limit} keys. */
    void add(long key, long limit) {
        long stamp = lock.writeLock();
        try {
            if (key == 0) {
                if (zeroCount++ == 0) {
                    size++;
                }
                return;
            }
            long[] k = keys;
            int slot = EngineBlockTable.home(key, k.length);
            while (k[slot] != 0) {
                if (k[slot] == key) {
                    counts[slot]++;
                    return;
                }
                slot = slot + 1 == k.length ? 0 : slot + 1;
            }
            if (size >= capacity) {
                // up to the limit: distinct keys never outnumber the engine blocks the limit allows
                allocate((int) Math.max(capacity + 1L, Math.min(limit, capacity * 2L)));
                k = keys;
                slot = EngineBlockTable.home(key, k.length);
                while (k[slot] != 0) {
                    slot = slot + 1 == k.length ? 0 : slot + 1;
                }
            }
            k[slot] = key;
            counts[slot] = 1;
            size++;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** One engine block fewer carries {@code key}. */
    void release(long key) {
        long stamp = lock.writeLock();
        try {
            if (key == 0) {
                if (zeroCount > 0 && --zeroCount == 0) {
                    size--;
                }
                return;
            }
            long[] k = keys;
            int slot = EngineBlockTable.home(key, k.length);
            for (int n = 0; n < k.length && k[slot] != 0; n++) {
                if (k[slot] == key) {
                    if (--counts[slot] == 0) {
                        delete(k, slot);
                        size--;
                    }
                    return;
                }
                slot = slot + 1 == k.length ? 0 : slot + 1;
            }
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Forgets every key; the arrays go back to room for {@code min(limit, first)} keys. */
    void clear(long limit) {
        long stamp = lock.writeLock();
        try {
            zeroCount = 0;
            size = 0;
            keys = null;
            allocate((int) Math.min(FIRST_CAPACITY, Math.max(1, limit)));
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Gives memory back when the arrays have more room than {@code limit} keys need (the limit was lowered). */
    void shrinkTo(long limit) {
        if (capacity <= limit || size > limit) {
            return;
        }
        long stamp = lock.writeLock();
        try {
            allocate((int) Math.max(1, limit));
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    boolean contains(long key) {
        long stamp = lock.tryOptimisticRead();
        boolean found = probe(key);
        if (lock.validate(stamp)) {
            return found;
        }
        stamp = lock.readLock();
        try {
            return probe(key);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /**
     * Leading blocks of {@code blockSize} tokens of the prompt whose {@code PromptChain} is
     * {@code promptChain} held: one key mixed and looked up per block, until the first miss. One
     * validation for the whole prompt.
     */
    int matchedBlocks(long[] promptChain, int blockSize) {
        long stamp = lock.tryOptimisticRead();
        int n = matched(promptChain, blockSize);
        if (lock.validate(stamp)) {
            return n;
        }
        stamp = lock.readLock();
        try {
            return matched(promptChain, blockSize);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    private int matched(long[] promptChain, int blockSize) {
        int i = 0;
        for (int end = blockSize - 1; end < promptChain.length; end += blockSize) {
            if (!probe(BlockChain.key(promptChain[end]))) {
                break;
            }
            i++;
        }
        return i;
    }

    private boolean probe(long key) {
        if (key == 0) {
            return zeroCount > 0;
        }
        long[] k = keys;
        int slot = EngineBlockTable.home(key, k.length);
        for (int n = 0; n < k.length; n++) {
            long at = k[slot];
            if (at == key) {
                return true;
            }
            if (at == 0) {
                return false;
            }
            slot = slot + 1 == k.length ? 0 : slot + 1;
        }
        return false;
    }

    /** Backward-shift deletion: no tombstones, so a probe stops at the first empty slot. */
    private void delete(long[] k, int gap) {
        int len = k.length;
        for (int j = gap + 1 == len ? 0 : gap + 1; k[j] != 0; j = j + 1 == len ? 0 : j + 1) {
            int home = EngineBlockTable.home(k[j], len);
            if (Math.floorMod(j - home, len) >= Math.floorMod(j - gap, len)) {
                k[gap] = k[j];
                counts[gap] = counts[j];
                gap = j;
            }
        }
        k[gap] = 0;
        counts[gap] = 0;
    }

    /** New arrays with room for {@code room} keys, the held keys placed again; under the write lock (or unpublished). */
    private void allocate(int room) {
        long[] oldKeys = keys;
        int[] oldCounts = counts;
        int len = EngineBlockTable.indexLength(room);
        long[] k = new long[len];
        int[] c = new int[len];
        if (oldKeys != null) {
            for (int i = 0; i < oldKeys.length; i++) {
                if (oldKeys[i] != 0) {
                    int slot = EngineBlockTable.home(oldKeys[i], len);
                    while (k[slot] != 0) {
                        slot = slot + 1 == len ? 0 : slot + 1;
                    }
                    k[slot] = oldKeys[i];
                    c[slot] = oldCounts[i];
                }
            }
        }
        counts = c;
        capacity = room;
        keys = k;
    }
}
