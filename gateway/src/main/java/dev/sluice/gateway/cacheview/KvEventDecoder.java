package dev.sluice.gateway.cacheview;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * Decodes the msgpack payload of a KV event batch as msgspec encodes SGLang's and vLLM's structs:
 *
 * <ul>
 *   <li>{@code array_like=True} (SGLang, sgl-project/sglang@612d579090db24ec7c47cc5ca6b83e0c649b8c28
 *       python/sglang/srt/disaggregation/kv_events.py; older vLLM): a batch is
 *       {@code [ts, [events], attn_dp_rank?]}, an event {@code [tag, fields in declaration order...]}:
 *       {@code ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium?...]},
 *       {@code ["BlockRemoved", block_hashes, medium?]}, {@code ["AllBlocksCleared"]};</li>
 *   <li>map form (vLLM without {@code array_like}, vllm-project/vllm@0181ea3173e53eea8cf04a86891488e3dc89bb34
 *       vllm/distributed/kv_events.py): {@code {"ts", "events", "data_parallel_rank"}}, each event a map
 *       with its tag under {@code "type"}.</li>
 * </ul>
 * Trailing fields it does not know (medium, lora_name, extra_keys...) are skipped, and so is an
 * event with an unknown tag; a block hash may be an integer or bytes (hashed to 64 bits).
 *
 * <p>The payload comes from the network: every length a header claims (array, map, string, bytes)
 * is checked against what is left of the payload before anything is allocated for it, since each
 * element takes at least one byte. A header claiming 2^31-1 elements in a 100-byte frame is then
 * a malformed frame, not a 16 GiB {@code new long[]} (issue 29).
 */
public final class KvEventDecoder {
    private KvEventDecoder() {
    }

    /** @throws IllegalArgumentException when the payload is not a KV event batch */
    public static KvEventBatch decode(byte[] payload) {
        try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
            return batch(new BoundedUnpacker(u, payload.length));
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException("not a KV event batch: " + e.getMessage(), e);
        }
    }

    private static KvEventBatch batch(BoundedUnpacker u) throws IOException {
        double ts = 0;
        List<KvEvent> events = new ArrayList<>();
        int rank = -1;
        if (u.in.getNextFormat().getValueType() == ValueType.ARRAY) {
            int n = u.arrayHeader();
            ts = number(u);
            events = events(u);
            if (n > 2) {
                rank = optionalInt(u);
            }
            skip(u, n - 3);
        } else {
            int n = u.mapHeader();
            for (int i = 0; i < n; i++) {
                switch (u.string()) {
                    case "ts" -> ts = number(u);
                    case "events" -> events = events(u);
                    case "data_parallel_rank", "attn_dp_rank" -> rank = optionalInt(u);
                    default -> u.in.skipValue();
                }
            }
        }
        return new KvEventBatch(ts, events, rank);
    }

    private static List<KvEvent> events(BoundedUnpacker u) throws IOException {
        int n = u.arrayHeader();
        List<KvEvent> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            KvEvent e = u.in.getNextFormat().getValueType() == ValueType.ARRAY ? arrayEvent(u) : mapEvent(u);
            if (e != null) {
                out.add(e);
            }
        }
        return out;
    }

    private static KvEvent arrayEvent(BoundedUnpacker u) throws IOException {
        int n = u.arrayHeader();
        String tag = u.string();
        KvEvent e;
        int read = 1;
        switch (tag) {
            case "BlockStored" -> {
                long[] hashes = hashes(u);
                OptionalLong parent = optionalHash(u);
                int[] tokens = ints(u);
                int blockSize = u.in.unpackInt();
                read = 5;
                e = new KvEvent.Stored(hashes, parent, tokens, blockSize);
            }
            case "BlockRemoved" -> {
                e = new KvEvent.Removed(hashes(u));
                read = 2;
            }
            case "AllBlocksCleared" -> e = new KvEvent.Cleared();
            default -> e = null;
        }
        skip(u, n - read);
        return e;
    }

    private static KvEvent mapEvent(BoundedUnpacker u) throws IOException {
        int n = u.mapHeader();
        String tag = null;
        long[] hashes = new long[0];
        OptionalLong parent = OptionalLong.empty();
        int[] tokens = new int[0];
        int blockSize = 0;
        for (int i = 0; i < n; i++) {
            switch (u.string()) {
                case "type" -> tag = u.string();
                case "block_hashes" -> hashes = hashes(u);
                case "parent_block_hash" -> parent = optionalHash(u);
                case "token_ids" -> tokens = ints(u);
                case "block_size" -> blockSize = u.in.unpackInt();
                default -> u.in.skipValue();
            }
        }
        if (tag == null) {
            return null;
        }
        return switch (tag) {
            case "BlockStored" -> new KvEvent.Stored(hashes, parent, tokens, blockSize);
            case "BlockRemoved" -> new KvEvent.Removed(hashes);
            case "AllBlocksCleared" -> new KvEvent.Cleared();
            default -> null;
        };
    }

    private static long[] hashes(BoundedUnpacker u) throws IOException {
        int n = u.arrayHeader();
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            out[i] = hash(u);
        }
        return out;
    }

    private static OptionalLong optionalHash(BoundedUnpacker u) throws IOException {
        if (u.in.tryUnpackNil()) {
            return OptionalLong.empty();
        }
        return OptionalLong.of(hash(u));
    }

    /** An engine block hash: an int64 (SGLang), an unsigned 64-bit int, or bytes (vLLM's sha256 form). */
    private static long hash(BoundedUnpacker u) throws IOException {
        MessageFormat f = u.in.getNextFormat();
        if (f.getValueType() == ValueType.INTEGER) {
            return f == MessageFormat.UINT64 ? u.in.unpackBigInteger().longValue() : u.in.unpackLong();
        }
        byte[] bytes = f.getValueType() == ValueType.BINARY ? u.binary()
                : u.string().getBytes(java.nio.charset.StandardCharsets.UTF_8);
        long h = 0xcbf29ce484222325L;
        for (byte b : bytes) {
            h = (h ^ (b & 0xff)) * 0x100000001b3L;
        }
        return h;
    }

    private static int[] ints(BoundedUnpacker u) throws IOException {
        int n = u.arrayHeader();
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = u.in.unpackInt();
        }
        return out;
    }

    private static double number(BoundedUnpacker u) throws IOException {
        return u.in.getNextFormat().getValueType() == ValueType.FLOAT ? u.in.unpackDouble() : u.in.unpackLong();
    }

    private static int optionalInt(BoundedUnpacker u) throws IOException {
        return u.in.tryUnpackNil() ? -1 : u.in.unpackInt();
    }

    private static void skip(BoundedUnpacker u, int values) throws IOException {
        for (int i = 0; i < values; i++) {
            u.in.skipValue();
        }
    }
}
