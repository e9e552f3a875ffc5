package dev.sluice.testbed.relay;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.net.URI;
import java.nio.charset.StandardCharsets;

/**
 * The bytes of the relay benchmark's traffic: a streamed chat completion request, and the worker's
 * answer as SGLang writes it (one {@code chat.completion.chunk} event of one token per HTTP chunk,
 * a usage event, {@code data: [DONE]}).
 */
final class ChatWire {
    /** One token's event, ~280 bytes like SGLang's OpenAI-compatible stream (no usage). */
    static final String EVENT = "data: {\"id\":\"6c1f0a2b9e3d4c5f8a7b6c5d4e3f2a1b\",\"object\":\"chat.completion.chunk\","
            + "\"created\":1764662400,\"model\":\"sim\",\"choices\":[{\"index\":0,"
            + "\"delta\":{\"role\":null,\"content\":\" tok\",\"reasoning_content\":null,"
            + "\"tool_calls\":null},\"logprobs\":null,\"finish_reason\":null,\"matched_stop\":null}],"
            + "\"usage\":null}\n\n";

    private ChatWire() {
    }

    /** {@code events} copies of {@link #EVENT}, each framed as its own HTTP chunk. */
    static ByteBuf chunkedEvents(int events) {
        byte[] e = EVENT.getBytes(StandardCharsets.UTF_8);
        byte[] head = (Integer.toHexString(e.length) + "\r\n").getBytes(StandardCharsets.US_ASCII);
        ByteBuf b = Unpooled.directBuffer(events * (head.length + e.length + 2));
        for (int i = 0; i < events; i++) {
            b.writeBytes(head).writeBytes(e).writeByte('\r').writeByte('\n');
        }
        return Unpooled.unreleasableBuffer(b);
    }

    /** The end of a stream of {@code tokens}: a usage event, [DONE], and the last chunk. */
    static ByteBuf end(long tokens) {
        String usage = "data: {\"id\":\"6c1f0a2b9e3d4c5f8a7b6c5d4e3f2a1b\",\"object\":\"chat.completion.chunk\","
                + "\"created\":1764662400,\"model\":\"sim\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,"
                + "\"completion_tokens\":" + tokens + ",\"total_tokens\":" + (tokens + 12) + "}}\n\n";
        StringBuilder sb = new StringBuilder();
        for (String e : new String[] {usage, "data: [DONE]\n\n"}) {
            sb.append(Integer.toHexString(e.getBytes(StandardCharsets.UTF_8).length)).append("\r\n").append(e).append("\r\n");
        }
        sb.append("0\r\n\r\n");
        return Unpooled.copiedBuffer(sb, StandardCharsets.UTF_8);
    }

    /** A streamed chat completion request for {@code maxTokens} tokens, keep-alive. */
    static ByteBuf request(URI target, long maxTokens) {
        byte[] body = ("{\"model\":\"sim\",\"messages\":[{\"role\":\"user\",\"content\":\"Write a very long story.\"}],"
                + "\"stream\":true,\"max_tokens\":" + maxTokens + "}").getBytes(StandardCharsets.UTF_8);
        String head = "POST /v1/chat/completions HTTP/1.1\r\nHost: " + target.getHost() + ":" + target.getPort()
                + "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: " + body.length
                + "\r\n\r\n";
        return Unpooled.wrappedBuffer(head.getBytes(StandardCharsets.US_ASCII), body);
    }

    /** A keep-alive GET. */
    static ByteBuf get(URI target, String path) {
        return Unpooled.copiedBuffer("GET " + path + " HTTP/1.1\r\nHost: " + target.getHost() + ":" + target.getPort()
                + "\r\n\r\n", StandardCharsets.US_ASCII);
    }
}
