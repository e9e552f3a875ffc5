package dev.sluice.gateway.tracing.otlp;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Protobuf's wire format written into one growing byte array that is kept from batch to batch,
 * so that encoding a batch allocates nothing once the array is big enough. A nested message is
 * written in place: one byte is reserved for its length, and when the message turns out longer
 * than 127 bytes its bytes move right to make room for the longer varint (one {@code arraycopy},
 * cheaper than the size pass a two-pass encoder makes over every field). Not thread-safe: one
 * writer per export thread.
 */
final class ProtoWriter {
    static final int VARINT = 0;
    static final int FIXED64 = 1;
    static final int LEN = 2;
    static final int FIXED32 = 5;

    private static final VarHandle LITTLE_ENDIAN_LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LITTLE_ENDIAN_INT =
            MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle BIG_ENDIAN_LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    private byte[] buf;
    private int pos;

    ProtoWriter(int initialCapacity) {
        buf = new byte[initialCapacity];
    }

    void reset() {
        pos = 0;
    }

    int size() {
        return pos;
    }

    /** Drops what was written after the first {@code size} bytes. */
    void truncate(int size) {
        if (size < 0 || size > pos) {
            throw new IllegalArgumentException("truncate to " + size + " of " + pos);
        }
        pos = size;
    }

    byte[] array() {
        return buf;
    }

    /** Drops the array (a send that failed may still hold it) for a new one of the same size. */
    void renew() {
        buf = new byte[buf.length];
        pos = 0;
    }

    /**
     * Hands over the array written so far (its bytes are [0, {@link #size()}) as read before this call)
     * and goes on, empty, in {@code next}.
     */
    byte[] take(byte[] next) {
        byte[] written = buf;
        buf = next;
        pos = 0;
        return written;
    }

    void tag(int field, int wireType) {
        varint((field << 3) | wireType);
    }

    void varint(long v) {
        ensure(10);
        while ((v & ~0x7FL) != 0) {
            buf[pos++] = (byte) ((v & 0x7F) | 0x80);
            v >>>= 7;
        }
        buf[pos++] = (byte) v;
    }

    void fixed64(long v) {
        ensure(8);
        LITTLE_ENDIAN_LONG.set(buf, pos, v);
        pos += 8;
    }

    void fixed32(int v) {
        ensure(4);
        LITTLE_ENDIAN_INT.set(buf, pos, v);
        pos += 4;
    }

    /** Field {@code field} as a nested message or length-delimited value: pass the result to {@link #end}. */
    int begin(int field) {
        tag(field, LEN);
        ensure(1);
        return pos++;
    }

    /**
     * As {@link #begin}, with two bytes reserved for the length: for a message that is usually
     * 128 to 16,383 bytes long (a span), whose bytes then never move. Pass the result to {@link #endWide}.
     */
    int beginWide(int field) {
        tag(field, LEN);
        ensure(2);
        int mark = pos;
        pos += 2;
        return mark;
    }

    void endWide(int mark) {
        end(mark, 2);
    }

    void end(int mark) {
        end(mark, 1);
    }

    // the message begun at mark, with reserved bytes for its length: when the length's varint needs
    // another number of bytes, the message's bytes move once
    private void end(int mark, int reserved) {
        int len = pos - mark - reserved;
        int lenSize = varintSize(len);
        if (lenSize != reserved) {
            ensure(lenSize - reserved);
            System.arraycopy(buf, mark + reserved, buf, mark + lenSize, len);
            pos += lenSize - reserved;
        }
        int p = mark;
        while ((len & ~0x7F) != 0) {
            buf[p++] = (byte) ((len & 0x7F) | 0x80);
            len >>>= 7;
        }
        buf[p] = (byte) len;
    }

    /** A string field, written only when not empty (proto3's default is not sent). */
    void string(int field, String s) {
        if (s != null && !s.isEmpty()) {
            stringAlways(field, s);
        }
    }

    /** A string field even when empty (a oneof member, where presence itself is the value). */
    void stringAlways(int field, String s) {
        int m = begin(field);
        utf8(s);
        end(m);
    }

    void bytes(int field, byte[] b) {
        tag(field, LEN);
        varint(b.length);
        ensure(b.length);
        System.arraycopy(b, 0, buf, pos, b.length);
        pos += b.length;
    }

    /** An id given as lowercase hex (a trace or span id) as its bytes; nothing for a null or all-zero id. */
    void hexId(int field, String hex) {
        if (hex == null || isZero(hex)) {
            return;
        }
        int n = hex.length() / 2;
        tag(field, LEN);
        varint(n);
        ensure(n);
        for (int i = 0; i < n; i++) {
            buf[pos++] = (byte) ((nibble(hex.charAt(2 * i)) << 4) | nibble(hex.charAt(2 * i + 1)));
        }
    }

    /** A span id given as a number, as its 8 big-endian bytes (the order of its hex form). */
    void id(int field, long id) {
        tag(field, LEN);
        varint(8);
        bigEndian(id);
    }

    /** A trace id given as two numbers, as its 16 big-endian bytes. */
    void id(int field, long high, long low) {
        tag(field, LEN);
        varint(16);
        bigEndian(high);
        bigEndian(low);
    }

    private void bigEndian(long v) {
        ensure(8);
        BIG_ENDIAN_LONG.set(buf, pos, v);
        pos += 8;
    }

    private static boolean isZero(String hex) {
        for (int i = 0; i < hex.length(); i++) {
            if (hex.charAt(i) != '0') {
                return false;
            }
        }
        return true;
    }

    private static int nibble(char c) {
        return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    }

    // the JDK's encoder: for the usual ASCII text a vectorised check and one array copy, faster than
    // a char-by-char loop (RequestTraceBenchmark.encodeSpan) for the price of a short-lived array
    private void utf8(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        raw(b);
    }

    /** Bytes as they are (a string's UTF-8 made earlier), no tag, no length. */
    void raw(byte[] b) {
        raw(b, b.length);
    }

    /** The first {@code length} bytes of {@code b} as they are. */
    void raw(byte[] b, int length) {
        raw(b, 0, length);
    }

    /** {@code b[from, from + length)} as they are. */
    void raw(byte[] b, int from, int length) {
        ensure(length);
        System.arraycopy(b, from, buf, pos, length);
        pos += length;
    }

    /** A string field given as its UTF-8 bytes, even when empty (a oneof member). */
    void utf8Always(int field, byte[] b) {
        tag(field, LEN);
        varint(b.length);
        raw(b);
    }

    /** A string field given as its UTF-8 bytes, written only when not empty. */
    void utf8Field(int field, byte[] b) {
        if (b.length > 0) {
            tag(field, LEN);
            varint(b.length);
            raw(b);
        }
    }

    static int varintSize(int v) {
        int n = 1;
        while ((v & ~0x7F) != 0) {
            n++;
            v >>>= 7;
        }
        return n;
    }

    private void ensure(int more) {
        if (pos + more > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, pos + more));
        }
    }
}
