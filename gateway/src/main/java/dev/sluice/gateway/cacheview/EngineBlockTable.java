package dev.sluice.gateway.cacheview;

import java.util.function.LongConsumer;

/**
 * One DP rank's blocks as its engine names them: engine block hash to the gateway's chain state
 * ({@link BlockChain}), in the order they were stored (a block stored again moves to the newest
 * end), so that the least recently stored is the first forgotten.
 *
 * <p>Primitive arrays instead of a {@code LinkedHashMap<Long, Long>} (about 100 bytes an entry in
 * boxes, nodes and table): entries in parallel arrays (hash, state, older and newer neighbour by
 * index: 24 bytes), found through an open-addressing index of entry numbers (linear probing, at
 * most 3/4 full: 16/3 bytes an entry). The arrays grow by doubling up to the limit they are given
 * and never past what {@link #bytesFor} says for it, so the view's budget is an exact sum.
 *
 * <p>Touched by the subscriber's thread only.
 */
final class EngineBlockTable {
    private static final int NONE = -1;
    private static final int FIRST_CAPACITY = 256;

    private long[] hashes;
    private long[] states;
    private int[] older;
    private int[] newer;
    /** Entry number + 1 per slot; 0: empty. */
    private int[] index;
    private int size;
    /** Entries [0, used) have been handed out; freed ones are chained through {@link #newer} from {@link #free}. */
    private int used;
    private int free = NONE;
    private int oldest = NONE;
    private int newest = NONE;

    EngineBlockTable(int limit) {
        allocate(Math.min(FIRST_CAPACITY, Math.max(1, limit)));
    }

    /** Exact bytes of this table's arrays when they hold {@code capacity} entries. */
    static long bytesFor(long capacity) {
        return ArrayBytes.longs(capacity) * 2 + ArrayBytes.ints(capacity) * 2 + ArrayBytes.ints(indexLength(capacity));
    }

    /** Bytes of the arrays held now. */
    long bytes() {
        return bytesFor(hashes.length);
    }

    int size() {
        return size;
    }

    int capacity() {
        return hashes.length;
    }

    /** The entry of engine hash {@code hash}, or -1. */
    int find(long hash) {
        int[] idx = index;
        for (int slot = home(hash, idx.length), n = 0; n < idx.length; n++) {
            int e = idx[slot] - 1;
            if (e < 0) {
                return NONE;
            }
            if (hashes[e] == hash) {
                return e;
            }
            slot = slot + 1 == idx.length ? 0 : slot + 1;
        }
        return NONE;
    }

    long state(int entry) {
        return states[entry];
    }

    /**
     * Stores {@code hash} as the newest entry, with {@code state}. The caller made room (the table
     * holds fewer than {@code limit}); the arrays grow up to {@code limit} entries.
     */
    void insert(long hash, long state, int limit) {
        if (size == hashes.length) {
            allocate(Math.min(limit, hashes.length * 2));
        }
        int e;
        if (free != NONE) {
            e = free;
            free = newer[e];
        } else {
            e = used++;
        }
        hashes[e] = hash;
        states[e] = state;
        link(e);
        place(e);
        size++;
    }

    /** Gives {@code entry} a new state and makes it the newest (it was stored again). */
    void restore(int entry, long state) {
        states[entry] = state;
        unlink(entry);
        link(entry);
    }

    /** The oldest stored entry, or -1 when empty. */
    int oldest() {
        return oldest;
    }

    void remove(int entry) {
        unlink(entry);
        unplace(entry);
        newer[entry] = free;
        free = entry;
        size--;
    }

    /** Each state, oldest first. */
    void forEachState(LongConsumer f) {
        for (int e = oldest; e != NONE; e = newer[e]) {
            f.accept(states[e]);
        }
    }

    /** Forgets every entry and gives back the grown arrays. */
    void clear(int limit) {
        size = 0;
        used = 0;
        free = NONE;
        oldest = NONE;
        newest = NONE;
        allocate(Math.min(FIRST_CAPACITY, Math.max(1, limit)));
    }

    /**
     * Arrays of {@code capacity} entries (at least {@link #size}), the entries kept in their
     * order: to grow, or to give memory back after the limit was lowered and the oldest forgotten.
     */
    void resize(int capacity) {
        allocate(capacity);
    }

    private void allocate(int capacity) {
        if (capacity < size) {
            throw new IllegalStateException("capacity " + capacity + " below size " + size);
        }
        long[] oldHashes = hashes;
        long[] oldStates = states;
        int[] oldNewer = newer;
        int from = oldest;
        hashes = new long[capacity];
        states = new long[capacity];
        older = new int[capacity];
        newer = new int[capacity];
        index = new int[indexLength(capacity)];
        int n = size;
        size = 0;
        used = 0;
        free = NONE;
        oldest = NONE;
        newest = NONE;
        // renumbered densely, oldest first: the order is the list's, not the old entry numbers'
        for (int e = from, k = 0; k < n; e = oldNewer[e], k++) {
            hashes[k] = oldHashes[e];
            states[k] = oldStates[e];
            link(k);
            place(k);
            used++;
            size++;
        }
    }

    private void link(int e) {
        older[e] = newest;
        newer[e] = NONE;
        if (newest != NONE) {
            newer[newest] = e;
        } else {
            oldest = e;
        }
        newest = e;
    }

    private void unlink(int e) {
        int o = older[e];
        int n = newer[e];
        if (o != NONE) {
            newer[o] = n;
        } else {
            oldest = n;
        }
        if (n != NONE) {
            older[n] = o;
        } else {
            newest = o;
        }
    }

    private void place(int e) {
        int slot = home(hashes[e], index.length);
        while (index[slot] != 0) {
            slot = slot + 1 == index.length ? 0 : slot + 1;
        }
        index[slot] = e + 1;
    }

    /** Empties {@code e}'s slot and shifts back the entries after it that its slot had pushed on (no tombstones). */
    private void unplace(int e) {
        int len = index.length;
        int gap = home(hashes[e], len);
        while (index[gap] != e + 1) {
            gap = gap + 1 == len ? 0 : gap + 1;
        }
        for (int j = gap + 1 == len ? 0 : gap + 1; index[j] != 0; j = j + 1 == len ? 0 : j + 1) {
            int home = home(hashes[index[j] - 1], len);
            // the entry at j may fill the gap if its home is not cyclically in (gap, j]
            if (Math.floorMod(j - home, len) >= Math.floorMod(j - gap, len)) {
                index[gap] = index[j];
                gap = j;
            }
        }
        index[gap] = 0;
    }

    static int indexLength(long capacity) {
        return (int) Math.min(Integer.MAX_VALUE - 8, capacity + capacity / 3 + 1);
    }

    /** A slot in [0, len) for {@code key}: its mixed high bits scaled to the table (Lemire's reduction). */
    static int home(long key, int len) {
        long h = key * 0x9E3779B97F4A7C15L;
        h ^= h >>> 29;
        return (int) (((h >>> 32) * len) >>> 32);
    }
}
