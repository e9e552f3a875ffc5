package dev.sluice.testbed.load;

import io.netty.buffer.ByteBuf;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/**
 * Splits a server-sent-event byte stream into lines as bytes arrive (chunks may cut a line, or a
 * UTF-8 character, anywhere) and hands over the payload of every {@code data:} line.
 */
final class SseLines {
    private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);

    void feed(ByteBuf bytes, Consumer<String> data) {
        for (int i = bytes.readerIndex(), end = bytes.writerIndex(); i < end; i++) {
            byte b = bytes.getByte(i);
            if (b != '\n') {
                line.write(b);
                continue;
            }
            String text = line.toString(StandardCharsets.UTF_8);
            line.reset();
            if (text.endsWith("\r")) {
                text = text.substring(0, text.length() - 1);
            }
            if (text.startsWith("data:")) {
                data.accept(text.substring(5).trim());
            }
        }
    }
}
