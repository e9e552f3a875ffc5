package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Finds, in a worker's 2xx answer, the signs that the request failed although the status said
 * otherwise. The real servers put them there (sgl-project/sglang
 * {@code python/sglang/srt/entrypoints/http_server.py} {@code generate_request},
 * {@code python/sglang/srt/managers/tokenizer_manager.py} {@code _handle_abort_finish_reason}; see
 * docs/compatibility.md):
 * <ul>
 *   <li>an error event, {@code data: {"error": {"message": ...}}}: SGLang's {@code /generate} stream
 *       reports a {@code ValueError} (prompt over the context length, bad sampling parameters) this way,
 *       without a code (newer versions add {@code "code": 400}); without a code it is the client's
 *       error (400), never the worker's;</li>
 *   <li>an abort finish, {@code meta_info.finish_reason: {"type": "abort", "message", "status_code"}}:
 *       how a stream (or, with no status code, a whole answer) ends that the server aborted (KV
 *       transfer failure: 500; its queue full: 503); in the OpenAI routes a choice's
 *       {@code "finish_reason": "abort"}.</li>
 * </ul>
 * A stream is scanned event by event across chunk boundaries (an event cut in two by the network
 * is judged whole), with one byte pass per chunk; an event is decoded only when it holds an
 * unescaped {@code "error"} or {@code "abort"} string, so a normal token stream costs no parsing.
 * Confined to one request's event loop.
 */
final class FailureScan {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final byte[] ERROR = "\"error\"".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ABORT = "\"abort\"".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] NONE = new byte[0];
    /** An event longer than this is judged on its first bytes only (a cumulative-text stream can be huge). */
    private static final int MAX_EVENT = 1 << 20;

    /**
     * A failure the worker reported inside a successful answer.
     *
     * @param status  the HTTP status the worker meant (400-599), or 0 when it named none (an abort of
     *                unknown cause: SGLang's abort by {@code /abort_request} has no status)
     * @param message the worker's own words, or a description when it gave none
     * @param abort   true for an abort finish, false for an error event
     */
    record Found(int status, String message, boolean abort) {
    }

    private byte[] partial = NONE;
    private int partialLength;
    private byte last;

    /** The first failure among the events that {@code chunk} completes, or null; the chunk is not consumed. */
    Found feed(ByteBuf chunk) {
        Found found = null;
        int from = chunk.readerIndex();
        int to = chunk.writerIndex();
        int eventStart = from;
        boolean candidate = false;
        for (int i = from; i < to; i++) {
            byte b = chunk.getByte(i);
            if (b == '"' && !candidate && partialLength == 0 && (i == from || chunk.getByte(i - 1) != '\\')) {
                candidate = at(chunk, i, to, ERROR) || at(chunk, i, to, ABORT);
            }
            if (b == '\n' && last == '\n') {
                if (partialLength > 0) {
                    append(chunk, eventStart, i + 1 - eventStart);
                    if (found == null && (indexOf(partial, partialLength, ERROR) >= 0
                            || indexOf(partial, partialLength, ABORT) >= 0)) {
                        found = judgeEvent(partial, 0, partialLength);
                    }
                    partialLength = 0;
                } else if (candidate && found == null) {
                    byte[] event = new byte[i + 1 - eventStart];
                    chunk.getBytes(eventStart, event);
                    found = judgeEvent(event, 0, event.length);
                }
                candidate = false;
                eventStart = i + 1;
            }
            last = b;
        }
        if (eventStart < to) {
            append(chunk, eventStart, to - eventStart); // an event cut by the network: judged when it completes
        }
        return found;
    }

    /** Judges a whole (non-streamed) answer: an abort finish or an error object at its top level. */
    static Found judgeBody(byte[] body, int length) {
        if (indexOf(body, length, ABORT) < 0 && indexOf(body, length, ERROR) < 0) {
            return null;
        }
        try {
            JsonNode root = JSON.readTree(body, 0, length);
            return root == null ? null : judge(root);
        } catch (IOException e) {
            return null; // not JSON: whoever reads the body says so
        }
    }

    /** Judges a whole answer that may be a stream (a buffered prefill's): event by event if it is one. */
    static Found judgeAnswer(byte[] body, int length) {
        int i = 0;
        while (i < length && Character.isWhitespace(body[i])) {
            i++;
        }
        if (length - i >= 5 && body[i] == 'd' && body[i + 1] == 'a' && body[i + 2] == 't' && body[i + 3] == 'a'
                && body[i + 4] == ':') {
            FailureScan scan = new FailureScan();
            ByteBuf whole = io.netty.buffer.Unpooled.wrappedBuffer(body, 0, length);
            Found f = scan.feed(whole);
            return f != null ? f : scan.feed(io.netty.buffer.Unpooled.wrappedBuffer(new byte[] {'\n', '\n'}));
        }
        return judgeBody(body, length);
    }

    private void append(ByteBuf chunk, int at, int n) {
        int keep = Math.min(n, MAX_EVENT - partialLength);
        if (keep <= 0) {
            return;
        }
        if (partial.length < partialLength + keep) {
            partial = Arrays.copyOf(partial, Math.max(partialLength + keep, partial.length * 2));
        }
        chunk.getBytes(at, partial, partialLength, keep);
        partialLength += keep;
    }

    private static Found judgeEvent(byte[] event, int from, int length) {
        String text = new String(event, from, length, StandardCharsets.UTF_8);
        StringBuilder data = null;
        for (String line : text.split("\n")) {
            String l = line.endsWith("\r") ? line.substring(0, line.length() - 1) : line;
            if (l.startsWith("data:")) {
                data = data == null ? new StringBuilder() : data.append('\n');
                data.append(l, l.startsWith("data: ") ? 6 : 5, l.length());
            }
        }
        if (data == null || data.length() == 0 || data.charAt(0) != '{') {
            return null; // [DONE], comments, or not JSON
        }
        try {
            JsonNode root = JSON.readTree(data.toString());
            return root == null ? null : judge(root);
        } catch (IOException e) {
            return null;
        }
    }

    private static Found judge(JsonNode root) {
        if (root.isArray()) {
            for (JsonNode item : root) { // a batch's answer: one failed item fails it
                Found f = judge(item);
                if (f != null) {
                    return f;
                }
            }
            return null;
        }
        JsonNode error = root.get("error");
        if (error != null && (error.isObject() || error.isTextual())) {
            String message = error.isTextual() ? error.asText() : error.path("message").asText("");
            int code = error.path("code").asInt(0);
            // SGLang's ValueError event has no code: the client's request was refused (400)
            return new Found(code >= 400 && code <= 599 ? code : 400, message, false);
        }
        if ("error".equals(root.path("object").asText())) { // vLLM's and SGLang's OpenAI error shape
            int code = root.path("code").asInt(0);
            return new Found(code >= 400 && code <= 599 ? code : 400, root.path("message").asText(""), false);
        }
        JsonNode finish = root.path("meta_info").path("finish_reason");
        if (finish.isObject() && "abort".equals(finish.path("type").asText())) {
            int code = finish.path("status_code").asInt(0);
            return new Found(code >= 400 && code <= 599 ? code : 0,
                    finish.path("message").asText("the worker aborted the request"), true);
        }
        for (JsonNode choice : root.path("choices")) {
            if ("abort".equals(choice.path("finish_reason").asText())) {
                return new Found(0, "the worker aborted the request (finish_reason abort)", true);
            }
        }
        return null;
    }

    private static boolean at(ByteBuf chunk, int i, int to, byte[] word) {
        if (to - i < word.length) {
            return false;
        }
        for (int k = 1; k < word.length; k++) {
            if (chunk.getByte(i + k) != word[k]) {
                return false;
            }
        }
        return true;
    }

    private static int indexOf(byte[] haystack, int length, byte[] needle) {
        outer:
        for (int i = 0, end = length - needle.length; i <= end; i++) {
            for (int k = 0; k < needle.length; k++) {
                if (haystack[i + k] != needle[k]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
