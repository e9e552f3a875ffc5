package dev.sluice.gateway.pd;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The finish reasons a worker's answer names, read from its bytes without a JSON parse: every
 * unescaped {@code "finish_reason":} key and its value, a string (a choice's in the OpenAI routes:
 * {@code "stop"}, {@code "length"}, ...), an object's {@code "type"} (SGLang's /generate
 * {@code meta_info.finish_reason}, {@code {"type": "length", "length": 16}}: sgl-project/sglang
 * python/sglang/srt/managers/schedule_batch.py, {@code BaseFinishReason.to_json} and its subclasses),
 * or {@code null} (a stream's chunk before the end: skipped). One per sequence that ended, in order,
 * at most {@link #MAX}.
 */
final class FinishReasons {
    static final int MAX = 64;
    private static final byte[] KEY = "\"finish_reason\"".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] TYPE = "\"type\"".getBytes(StandardCharsets.US_ASCII);
    private static final int MAX_REASON = 64;

    private final List<String> reasons = new ArrayList<>(1);

    private FinishReasons() {
    }

    /** A holder to {@link #find} into. */
    static FinishReasons collecting() {
        return new FinishReasons();
    }

    List<String> list() {
        return reasons;
    }

    /** Adds the non-null finish reasons named in {@code b[from, to)}. */
    void find(byte[] b, int from, int to) {
        int i = from;
        while (reasons.size() < MAX && (i = indexOf(b, i, to, KEY)) >= 0) {
            boolean escaped = i > from && b[i - 1] == '\\'; // inside a string: the answer's text, not a key
            int v = value(b, i + KEY.length, to);
            i += KEY.length;
            if (escaped || v < 0) {
                continue;
            }
            if (b[v] == '"') {
                add(b, v, to);
            } else if (b[v] == '{') {
                int t = indexOf(b, v, Math.min(to, v + 256), TYPE);
                int tv = t < 0 ? -1 : value(b, t + TYPE.length, to);
                if (tv >= 0 && b[tv] == '"') {
                    add(b, tv, to);
                }
            }
        }
    }

    /** The index of the value after a key ending at {@code i} (past {@code :} and spaces), or -1. */
    private static int value(byte[] b, int i, int to) {
        while (i < to && b[i] == ' ') {
            i++;
        }
        if (i >= to || b[i] != ':') {
            return -1;
        }
        i++;
        while (i < to && b[i] == ' ') {
            i++;
        }
        return i < to ? i : -1;
    }

    /** The string starting with the quote at {@code q}; added unless it holds escapes or is too long. */
    private void add(byte[] b, int q, int to) {
        for (int e = q + 1; e < to && e <= q + 1 + MAX_REASON; e++) {
            if (b[e] == '\\') {
                return;
            }
            if (b[e] == '"') {
                reasons.add(new String(b, q + 1, e - q - 1, StandardCharsets.UTF_8));
                return;
            }
        }
    }

    static int indexOf(byte[] b, int from, int to, byte[] needle) {
        outer:
        for (int i = from, end = to - needle.length; i <= end; i++) {
            for (int k = 0; k < needle.length; k++) {
                if (b[i + k] != needle[k]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
