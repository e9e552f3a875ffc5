package dev.sluice.gateway.pd;

import io.netty.buffer.ByteBuf;
import java.io.ByteArrayOutputStream;

/** A response body kept on the heap up to a limit; past it, the body is marked as overflowed. */
final class BoundedBody {
    private final long limit;
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private boolean overflowed;

    BoundedBody(long limit) {
        this.limit = limit;
    }

    /** Copies what fits; the caller still owns (and releases) {@code data}. */
    void append(ByteBuf data) {
        int n = data.readableBytes();
        if (overflowed || bytes.size() + (long) n > limit) {
            overflowed = true;
            return;
        }
        byte[] copy = new byte[n];
        data.getBytes(data.readerIndex(), copy);
        bytes.write(copy, 0, n);
    }

    boolean overflowed() {
        return overflowed;
    }

    byte[] toByteArray() {
        return bytes.toByteArray();
    }

    int size() {
        return bytes.size();
    }
}
