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
    static final int[] NO_TOKENS = new int[0];
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

    /**
     * The simulator's token ids of a text prompt's full blocks ({@value PrefixCache#BLOCK_TOKENS} per
     * block): the text cut into groups of 4 chars (the sim's "4 bytes a token"), each group's id the
     * 32-bit FNV-1a hash of its UTF-16 chars, masked to 31 bits. This is the sim's tokenizer: what its
     * KV events carry and what a gateway must reproduce to match prompts against them (the gateway's
     * {@code cacheview.SimTokenizer}; docs/cache-affinity.md). A real server's ids come from its model's
     * tokenizer instead.
     */
    static int[] tokens(CharSequence text) {
        int n = text.length() / BLOCK_CHARS * PrefixCache.BLOCK_TOKENS;
        int[] ids = new int[n];
        for (int t = 0; t < n; t++) {
            int h = 0x811c9dc5;
            for (int i = 4 * t, end = i + 4; i < end; i++) {
                h = (h ^ text.charAt(i)) * 0x01000193;
            }
            ids[t] = h & 0x7fffffff;
        }
        return ids;
    }

    /** Token ids of a prompt given as ids: the ids of its full blocks, as they are. */
    static int[] tokens(JsonNode ids) {
        int n = ids.size() / PrefixCache.BLOCK_TOKENS * PrefixCache.BLOCK_TOKENS;
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = (int) ids.get(i).asLong();
        }
        return out;
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
