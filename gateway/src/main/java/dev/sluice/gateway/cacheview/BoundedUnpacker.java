package dev.sluice.gateway.cacheview;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * A msgpack reader over one received frame whose headers are checked against the bytes left in
 * the frame before they are trusted: an array of n elements needs at least n more bytes (the
 * smallest msgpack value, a fixint or nil, is one byte), a map of n entries 2n, a string or a
 * byte string of n bytes n. A header that claims more is a malformed frame, found before any
 * array, list or string is allocated for it.
 */
final class BoundedUnpacker {
    final MessageUnpacker in;
    private final long frameBytes;

    BoundedUnpacker(MessageUnpacker in, long frameBytes) {
        this.in = in;
        this.frameBytes = frameBytes;
    }

    /** Bytes of the frame not read yet. */
    long remaining() {
        return frameBytes - in.getTotalReadBytes();
    }

    int arrayHeader() throws IOException {
        return fits(in.unpackArrayHeader(), 1, "array");
    }

    int mapHeader() throws IOException {
        return fits(in.unpackMapHeader(), 2, "map");
    }

    String string() throws IOException {
        if (in.getNextFormat().getValueType() != ValueType.STRING) {
            throw new IllegalArgumentException("expected a string, found " + in.getNextFormat());
        }
        int n = fits(in.unpackRawStringHeader(), 1, "string");
        return new String(in.readPayload(n), StandardCharsets.UTF_8);
    }

    byte[] binary() throws IOException {
        return in.readPayload(fits(in.unpackBinaryHeader(), 1, "bytes"));
    }

    private int fits(int claimed, int bytesEach, String what) {
        // msgpack-java reads a 32-bit length as a signed int: a claim past 2^31-1 arrives negative
        if (claimed < 0 || (long) claimed * bytesEach > remaining()) {
            throw new IllegalArgumentException(what + " of " + Integer.toUnsignedString(claimed)
                    + " claimed with " + remaining() + " bytes left in the frame");
        }
        return claimed;
    }
}
