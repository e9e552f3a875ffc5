package dev.sluice.gateway.cacheview;

/**
 * The heap size of primitive arrays on a 64-bit HotSpot JVM with compressed class pointers (the
 * default below 32 GiB of heap): a 16-byte header (mark word, class pointer, length), the
 * elements, rounded up to 8 bytes. Exact for the arrays it sizes, so the KV view's accounting is
 * what the heap holds, not an estimate.
 */
final class ArrayBytes {
    private static final long HEADER = 16;

    private ArrayBytes() {
    }

    static long longs(long n) {
        return HEADER + 8 * n;
    }

    static long ints(long n) {
        return align(HEADER + 4 * n);
    }

    private static long align(long bytes) {
        return (bytes + 7) & ~7L;
    }
}
