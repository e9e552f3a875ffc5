package dev.sluice.gateway.pd;

import io.netty.buffer.ByteBuf;
import java.util.Arrays;

/**
 * A response body kept on the heap up to a limit; past it, the body is marked as overflowed.
 * One growable array, written straight from the network buffers (no intermediate copies), so a
 * small answer costs one allocation of about its size.
 */
final class BoundedBody {
    private static final byte[] EMPTY = new byte[0];
    private final long limit;
    private byte[] bytes = EMPTY;
    private int size;
    private boolean overflowed;

    BoundedBody(long limit) {
        this.limit = limit;
    }

    /** Copies what fits; the caller still owns (and releases) {@code data}. */
    void append(ByteBuf data) {
        int n = data.readableBytes();
        if (overflowed || size + (long) n > limit) {
            overflowed = true;
            return;
        }
        if (size + n > bytes.length) {
            bytes = Arrays.copyOf(bytes, (int) Math.min(limit, Math.max(size + n, Math.max(256, 2L * bytes.length))));
        }
        data.getBytes(data.readerIndex(), bytes, size, n);
        size += n;
    }

    boolean overflowed() {
        return overflowed;
    }

    /** The backing array; valid bytes are {@code [0, size())}. Not a copy. */
    byte[] array() {
        return bytes;
    }

    /** A copy of exactly the body. */
    byte[] toByteArray() {
        return Arrays.copyOf(bytes, size);
    }

    int size() {
        return size;
    }
}
