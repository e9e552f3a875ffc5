package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.FastThreadLocal;
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
 * The same pass reads the token counts a worker reports ({@code "prompt_tokens":},
 * {@code "completion_tokens":}) from whole events, so a count cut by a chunk boundary is never
 * misread. Confined to one request's event loop.
 */
final class FailureScan {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final byte[] ERROR_TEXT = "\"error\"".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ABORT_TEXT = "\"abort\"".getBytes(StandardCharsets.US_ASCII);
    /** The seven bytes of each marker as the low bytes of a long, and the mask that keeps seven bytes. */
    private static final long ERROR = packed(ERROR_TEXT);
    private static final long ABORT = packed(ABORT_TEXT);
    /** The last seven bytes of both {@code "prompt_tokens"} and {@code "completion_tokens"}. */
    private static final long TOKENS = packed("tokens\"".getBytes(StandardCharsets.US_ASCII));
    /** The last seven bytes of {@code "finish_reason"}. */
    private static final long REASON = packed("reason\"".getBytes(StandardCharsets.US_ASCII));
    private static final long MARKER_MASK = (1L << 56) - 1;
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
    /** The last eight bytes seen, newest in the low byte: matches the markers and "\n\n" across chunk boundaries. */
    private long window;
    /** The current event holds an unescaped marker: it is decoded when it ends. */
    private boolean candidate;
    /** The current event names a token count: it is read when the event ends. */
    private boolean counts;
    /** The current event names a finish reason that is not null: it is read when the event ends. */
    private boolean finishing;
    private final FinishReasons finishReasons = FinishReasons.collecting();
    private long promptTokens;
    private long completionTokens;
    /**
     * The chunk's bytes, copied once: a plain array loop is faster than a byte callback. One array per
     * thread (a scan runs on its request's event loop and keeps nothing in it between calls), so a
     * thousand open streams do not each hold one.
     */
    private static final FastThreadLocal<byte[]> SCRATCH = new FastThreadLocal<>() {
        @Override
        protected byte[] initialValue() {
            return new byte[8192];
        }
    };

    /** The first failure among the events that {@code chunk} completes, or null; the chunk is not consumed. */
    Found feed(ByteBuf chunk) {
        int n = chunk.readableBytes();
        byte[] b = SCRATCH.get();
        if (b.length < n) {
            b = new byte[n];
            SCRATCH.set(b);
        }
        chunk.getBytes(chunk.readerIndex(), b, 0, n);
        Found found = null;
        long w = window;
        boolean marked = candidate;
        boolean counted = counts;
        boolean finished = finishing;
        int eventStart = 0;
        for (int i = 0; i < n; i++) {
            w = (w << 8) | (b[i] & 0xff);
            if (b[i] == '"') {
                long word = w & MARKER_MASK;
                marked = marked || (word == ERROR || word == ABORT) && (w >>> 56) != '\\';
                counted = counted || word == TOKENS;
                // a stream's chunks say "finish_reason":null until the end: those cost no read
                finished = finished || word == REASON && !nullFollows(b, i + 1, n);
            } else if (b[i] == '\n' && ((w >>> 8) & 0xff) == '\n') { // an event ends here
                if (finished) {
                    if (partialLength == 0) {
                        finishReasons.find(b, eventStart, i + 1);
                    } else {
                        append(b, eventStart, i + 1 - eventStart);
                        finishReasons.find(partial, 0, partialLength);
                        eventStart = i + 1;
                    }
                }
                if (counted) {
                    if (partialLength == 0) {
                        readCounts(b, eventStart, i + 1); // the whole event is in this chunk: no copy
                    } else {
                        append(b, eventStart, i + 1 - eventStart);
                        readCounts(partial, 0, partialLength);
                        eventStart = i + 1;
                    }
                }
                if (marked && found == null) {
                    found = judgeEvent(eventBytes(b, eventStart, i + 1));
                }
                partialLength = 0;
                marked = false;
                counted = false;
                finished = false;
                w = 0;
                eventStart = i + 1;
            }
        }
        window = w;
        candidate = marked;
        counts = counted;
        finishing = finished;
        if (eventStart < n) {
            append(b, eventStart, n - eventStart); // an event cut by the network: judged when it completes
        }
        return found;
    }

    private void readCounts(byte[] b, int from, int to) {
        long p = PromptTokens.find(b, from, to, PromptTokens.PROMPT);
        if (p > 0) {
            promptTokens = p;
        }
        completionTokens = Math.max(completionTokens, PromptTokens.find(b, from, to, PromptTokens.COMPLETION));
    }

    /** The prompt-token count the stream reported in its last whole event that had one; 0 before any. */
    long promptTokens() {
        return promptTokens;
    }

    /** The largest completion-token count the stream reported in a whole event (cumulative in SGLang's); 0 before any. */
    long completionTokens() {
        return completionTokens;
    }

    /** The finish reasons the stream's whole events named (one per sequence that ended), in order. */
    java.util.List<String> finishReasons() {
        return finishReasons.list();
    }

    /** Whether {@code :null} (spaces allowed) follows at {@code i} within the chunk. */
    private static boolean nullFollows(byte[] b, int i, int n) {
        while (i < n && (b[i] == ' ' || b[i] == ':')) {
            i++;
        }
        return i < n && b[i] == 'n';
    }

    /** The failure in an event the stream left unfinished (a whole answer without its last blank line), or null. */
    Found end() {
        Found f = candidate && partialLength > 0 ? judgeEvent(Arrays.copyOf(partial, partialLength)) : null;
        if (counts && partialLength > 0) {
            readCounts(partial, 0, partialLength);
        }
        if (finishing && partialLength > 0) {
            finishReasons.find(partial, 0, partialLength);
        }
        finishing = false;
        partialLength = 0;
        candidate = false;
        counts = false;
        window = 0;
        return f;
    }

    /** The event's bytes: what an earlier chunk left over, then this chunk's part. */
    private byte[] eventBytes(byte[] chunk, int from, int to) {
        if (partialLength == 0) {
            return Arrays.copyOfRange(chunk, from, to);
        }
        append(chunk, from, to - from);
        return Arrays.copyOf(partial, partialLength);
    }

    /** Judges a whole (non-streamed) answer: an abort finish or an error object at its top level. */
    static Found judgeBody(byte[] body, int length) {
        if (indexOf(body, length, ABORT_TEXT) < 0 && indexOf(body, length, ERROR_TEXT) < 0) {
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
            Found f = scan.feed(Unpooled.wrappedBuffer(body, 0, length));
            return f != null ? f : scan.end();
        }
        return judgeBody(body, length);
    }

    private void append(byte[] chunk, int at, int n) {
        int keep = Math.min(n, MAX_EVENT - partialLength);
        if (keep <= 0) {
            return;
        }
        if (partial.length < partialLength + keep) {
            partial = Arrays.copyOf(partial, Math.max(partialLength + keep, partial.length * 2));
        }
        System.arraycopy(chunk, at, partial, partialLength, keep);
        partialLength += keep;
    }

    private static Found judgeEvent(byte[] event) {
        String text = new String(event, StandardCharsets.UTF_8);
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

    private static long packed(byte[] word) {
        long v = 0;
        for (byte b : word) {
            v = (v << 8) | (b & 0xff);
        }
        return v;
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
