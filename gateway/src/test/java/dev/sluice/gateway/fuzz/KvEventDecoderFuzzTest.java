package dev.sluice.gateway.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.sluice.gateway.cacheview.KvEventBatch;
import dev.sluice.gateway.cacheview.KvEventDecoder;
import dev.sluice.gateway.cacheview.WorkerBlocks;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * A KV event frame from a publisher the gateway does not control, through what the subscriber
 * does with it: decoded and applied to a worker's view, or refused as not a batch
 * (IllegalArgumentException, counted as malformed). Nothing else may escape, and no header may
 * make the decoder allocate more than the frame could hold (issue 29: an array header claiming
 * 2^31-1 elements ended the subscriber with OutOfMemoryError).
 */
class KvEventDecoderFuzzTest {
    /** Headers that claim far more than any frame holds: array32, map32, str32, bin32, and the 16-bit forms. */
    private static final byte[][] GREEDY = {
            {(byte) 0xdd, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff}, {(byte) 0xdf, 0x7f, (byte) 0xff, (byte) 0xff,
            (byte) 0xff}, {(byte) 0xdb, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff}, {(byte) 0xc6, 0x7f, (byte) 0xff,
            (byte) 0xff, (byte) 0xff}, {(byte) 0xdd, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff},
            {(byte) 0xdc, (byte) 0xff, (byte) 0xff}, {(byte) 0xde, (byte) 0xff, (byte) 0xff}};

    @FuzzTest(maxDuration = "10s")
    void anyFrameDecodesOrIsRefused(FuzzedDataProvider data) {
        decodeOrRefuse(data.consumeRemainingAsBytes(), new WorkerBlocks(1_000, 2));
    }

    /** 10,000 frames: mutations of SGLang's and vLLM's batches, truncations, greedy headers, pure noise. */
    @Test
    void tenThousandHostileFramesAreEachDecodedOrCountedAsMalformed() throws IOException {
        List<byte[]> seeds = List.of(sglangBatch(), vllmBatch());
        Random rnd = new Random(2029);
        WorkerBlocks blocks = new WorkerBlocks(1_000, 2);
        int decoded = 0;
        int refused = 0;
        for (int i = 0; i < 10_000; i++) {
            byte[] frame = frame(rnd, seeds.get(rnd.nextInt(seeds.size())));
            if (decodeOrRefuse(frame, blocks)) {
                decoded++;
            } else {
                refused++;
            }
        }
        assertThat(decoded + refused).isEqualTo(10_000);
        assertThat(refused).as("most mutations break the frame").isGreaterThan(1_000);
        assertThat(decoded).as("some mutations keep it a batch (values changed)").isGreaterThan(100);
        assertThat(KvEventDecoder.decode(sglangBatch()).events()).hasSize(3);
    }

    /** Whether {@code frame} decoded (and was applied); false when refused as not a batch. */
    private static boolean decodeOrRefuse(byte[] frame, WorkerBlocks blocks) {
        KvEventBatch batch;
        try {
            batch = KvEventDecoder.decode(frame);
        } catch (IllegalArgumentException refused) {
            return false;
        }
        blocks.apply(Math.floorMod(batch.dpRank(), blocks.ranks()), batch, 1);
        assertThat(blocks.size()).isLessThanOrEqualTo(2_000);
        return true;
    }

    private static byte[] frame(Random rnd, byte[] seed) {
        byte[] f = seed.clone();
        switch (rnd.nextInt(6)) {
            case 0 -> {
                return Arrays.copyOf(f, rnd.nextInt(f.length)); // truncated
            }
            case 1 -> {
                for (int n = 1 + rnd.nextInt(4); n > 0; n--) {
                    f[rnd.nextInt(f.length)] ^= (byte) (1 << rnd.nextInt(8)); // bit flips
                }
                return f;
            }
            case 2 -> {
                f[rnd.nextInt(f.length)] = (byte) rnd.nextInt(256);
                return f;
            }
            case 3 -> {
                byte[] greedy = GREEDY[rnd.nextInt(GREEDY.length)];
                int at = rnd.nextInt(f.length);
                byte[] out = new byte[f.length + greedy.length];
                System.arraycopy(f, 0, out, 0, at);
                System.arraycopy(greedy, 0, out, at, greedy.length);
                System.arraycopy(f, at, out, at + greedy.length, f.length - at);
                return out;
            }
            case 4 -> {
                byte[] noise = new byte[rnd.nextInt(200)];
                rnd.nextBytes(noise);
                return noise;
            }
            default -> {
                byte[] greedy = GREEDY[rnd.nextInt(GREEDY.length)];
                int at = rnd.nextInt(Math.max(1, f.length - greedy.length));
                System.arraycopy(greedy, 0, f, at, Math.min(greedy.length, f.length - at)); // overwritten in place
                return f;
            }
        }
    }

    /** SGLang's array_like form: [ts, [BlockStored, BlockStored, BlockRemoved], attn_dp_rank]. */
    static byte[] sglangBatch() throws IOException {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3).packDouble(1.5).packArrayHeader(3);
            p.packArrayHeader(7).packString("BlockStored").packArrayHeader(1).packLong(-123).packNil();
            p.packArrayHeader(4).packInt(1).packInt(2).packInt(3).packInt(4).packInt(2).packNil().packString("GPU");
            p.packArrayHeader(6).packString("BlockStored").packArrayHeader(1).packLong(77).packLong(-123);
            p.packArrayHeader(2).packInt(5).packInt(6).packInt(2).packNil();
            p.packArrayHeader(2).packString("BlockRemoved").packArrayHeader(1).packLong(77);
            p.packInt(1);
            return p.toByteArray();
        }
    }

    /** vLLM's map form with bytes block hashes. */
    static byte[] vllmBatch() throws IOException {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(3).packString("ts").packDouble(2.0).packString("events").packArrayHeader(2);
            p.packMapHeader(5).packString("type").packString("BlockStored").packString("block_hashes")
                    .packArrayHeader(1).packBinaryHeader(4).writePayload(new byte[] {1, 2, 3, 4})
                    .packString("parent_block_hash").packNil().packString("token_ids").packArrayHeader(2).packInt(9)
                    .packInt(8).packString("block_size").packInt(2);
            p.packMapHeader(1).packString("type").packString("AllBlocksCleared");
            p.packString("data_parallel_rank").packInt(0);
            return p.toByteArray();
        }
    }
}
