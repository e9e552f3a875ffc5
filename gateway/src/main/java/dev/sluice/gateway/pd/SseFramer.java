package dev.sluice.gateway.pd;

import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Splits a server-sent-events byte stream into whole events, across chunk boundaries (bytes are
 * split before decoding, so a UTF-8 character cut in two by the network stays whole). Only used
 * where the gateway must rewrite events (logprob merging); plain streams are relayed untouched.
 */
final class SseFramer {
    private byte[] partial = new byte[0];

    /** Returns the data payloads of the events completed by {@code chunk}. */
    List<String> feed(ByteBuf chunk) {
        int n = chunk.readableBytes();
        byte[] buf = Arrays.copyOf(partial, partial.length + n);
        chunk.getBytes(chunk.readerIndex(), buf, partial.length, n);
        List<String> events = new ArrayList<>();
        int start = 0;
        for (int i = 0; i + 1 < buf.length; i++) {
            if (buf[i] == '\n' && buf[i + 1] == '\n') {
                String data = dataOf(new String(buf, start, i - start, StandardCharsets.UTF_8));
                if (data != null) {
                    events.add(data);
                }
                start = i + 2;
                i++;
            }
        }
        partial = Arrays.copyOfRange(buf, start, buf.length);
        return events;
    }

    private static String dataOf(String event) {
        StringBuilder data = null;
        for (String line : event.split("\n")) {
            String l = line.endsWith("\r") ? line.substring(0, line.length() - 1) : line;
            if (l.startsWith("data:")) {
                data = data == null ? new StringBuilder() : data.append('\n');
                data.append(l.substring(l.startsWith("data: ") ? 6 : 5));
            }
        }
        return data == null ? null : data.toString();
    }

    static byte[] encode(String payload) {
        return ("data: " + payload + "\n\n").getBytes(StandardCharsets.UTF_8);
    }

}
