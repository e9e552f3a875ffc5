package dev.sluice.gateway.tracing.otlp;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.CodedOutputStream;
import java.io.ByteArrayOutputStream;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The writer's fields against protobuf's own CodedOutputStream, at every length boundary. */
class ProtoWriterTest {
    private static final int[] LENGTHS = {0, 1, 126, 127, 128, 129, 16_382, 16_383, 16_384, 16_385, 2_097_152};

    private static byte[] written(ProtoWriter w) {
        return Arrays.copyOf(w.array(), w.size());
    }

    private static byte[] expected(int field, byte[] content, long fixed64, int fixed32) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        CodedOutputStream out = CodedOutputStream.newInstance(bytes);
        out.writeByteArray(field, content);
        out.writeFixed64(3, fixed64);
        out.writeFixed32(4, fixed32);
        out.flush();
        return bytes.toByteArray();
    }

    @Test
    void aNestedMessageOfAnyLengthIsWrittenAsProtobufWritesIt() throws Exception {
        for (int len : LENGTHS) {
            byte[] content = new byte[len];
            for (int i = 0; i < len; i++) {
                content[i] = (byte) (i * 31);
            }
            for (boolean wide : new boolean[] {false, true}) {
                ProtoWriter w = new ProtoWriter(16);
                int m = wide ? w.beginWide(2) : w.begin(2);
                w.raw(content);
                if (wide) {
                    w.endWide(m);
                } else {
                    w.end(m);
                }
                w.tag(3, ProtoWriter.FIXED64);
                w.fixed64(0x0102030405060708L);
                w.tag(4, ProtoWriter.FIXED32);
                w.fixed32(0xA1B2C3D4);
                assertThat(written(w)).as("length %d, wide %s", len, wide)
                        .isEqualTo(expected(2, content, 0x0102030405060708L, 0xA1B2C3D4));
            }
        }
    }

    @Test
    void idsAreWrittenBigEndianAsTheirHexReads() {
        ProtoWriter w = new ProtoWriter(4);
        w.id(1, 0x4bf92f3577b34da6L, 0xa3ce929d0e0e4736L);
        w.id(2, 0x00f067aa0ba902b7L);
        ProtoWriter hex = new ProtoWriter(4);
        hex.hexId(1, "4bf92f3577b34da6a3ce929d0e0e4736");
        hex.hexId(2, "00f067aa0ba902b7");
        assertThat(written(w)).isEqualTo(written(hex));
    }
}
