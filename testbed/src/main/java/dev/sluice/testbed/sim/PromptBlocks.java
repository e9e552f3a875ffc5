package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The prefix-cache keys of a prompt: one per full block of {@value PrefixCache#BLOCK_TOKENS}
 * tokens, each a 64-bit hash of the whole prompt up to the block's end, so that two prompts share
 * block k exactly when they share their first k + 1 blocks. Text is cut into blocks of
 * {@value #BLOCK_CHARS} characters (about 16 tokens at the simulator's 4 bytes a token); token ids
 * into blocks of 16 ids. A trailing partial block is never cached (as in SGLang's paged cache and vLLM).
 */
final class PromptBlocks {
    static final int BLOCK_CHARS = 4 * PrefixCache.BLOCK_TOKENS;
    static final long[] NONE = new long[0];
    private static final long FNV_PRIME = 0x100000001b3L;
    private static final long TEXT_BASIS = 0xcbf29ce484222325L;
    /** Ids hash apart from text, so that "12" typed and id 12 never meet. */
    private static final long IDS_BASIS = 0x84222325cbf29ce4L;

    private PromptBlocks() {
    }

    static long[] ofText(CharSequence text) {
        int n = text.length() / BLOCK_CHARS;
        if (n == 0) {
            return NONE;
        }
        long[] keys = new long[n];
        long h = TEXT_BASIS;
        for (int b = 0; b < n; b++) {
            for (int i = b * BLOCK_CHARS, end = i + BLOCK_CHARS; i < end; i++) {
                h = (h ^ text.charAt(i)) * FNV_PRIME;
            }
            keys[b] = mix(h);
        }
        return keys;
    }

    /** Blocks of a prompt given as a JSON array of token ids. */
    static long[] ofIds(JsonNode ids) {
        int n = ids.size() / PrefixCache.BLOCK_TOKENS;
        if (n == 0) {
            return NONE;
        }
        long[] keys = new long[n];
        long h = IDS_BASIS;
        for (int b = 0; b < n; b++) {
            for (int i = b * PrefixCache.BLOCK_TOKENS, end = i + PrefixCache.BLOCK_TOKENS; i < end; i++) {
                h = (h ^ ids.get(i).asLong()) * FNV_PRIME;
            }
            keys[b] = mix(h);
        }
        return keys;
    }

    /** The rendered chat prompt: every message in order, {@code role: content}, one per line. */
    static String renderChat(JsonNode messages) {
        StringBuilder b = new StringBuilder();
        for (JsonNode m : messages) {
            b.append(m.path("role").asText("")).append(": ");
            JsonNode content = m.get("content");
            if (content != null && content.isArray()) {
                for (JsonNode part : content) {
                    b.append(part.isTextual() ? part.asText() : part.path("text").asText(""));
                }
            } else if (content != null && !content.isNull()) {
                b.append(content.asText());
            }
            b.append('\n');
        }
        return b.toString();
    }

    /** SplitMix64's finalizer: FNV's low bits alone are weak, and LinkedHashMap hashes the key. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
