package dev.sluice.gateway.cacheview;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * Payloads written out byte by byte from the msgpack spec and the structs as msgspec encodes them
 * (SGLang: sgl-project/sglang@612d579090db24ec7c47cc5ca6b83e0c649b8c28
 * python/sglang/srt/disaggregation/kv_events.py, array_like + tag; vLLM:
 * vllm-project/vllm@0181ea3173e53eea8cf04a86891488e3dc89bb34 vllm/distributed/kv_events.py, maps),
 * not produced by any encoder of ours.
 */
class KvEventDecoderTest {
    private static byte[] hex(String... parts) {
        return HexFormat.of().parseHex(String.join("", parts).replace(" ", ""));
    }

    @Test
    void sglangArrayLikeBatchOfEveryEventKind() {
        byte[] payload = hex(
                "93",                               // KVEventBatch: fixarray of 3 [ts, events, attn_dp_rank]
                "cb 3ff8000000000000",              // ts: float64 1.5
                "95",                               // events: fixarray of 5
                // BlockStored, 6 fields: [tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id]
                "96", "ab 426c6f636b53746f726564",  // "BlockStored" (fixstr 11)
                "91 d3 ffffffffffffff85",           // block_hashes: [int64 -123]
                "c0",                               // parent_block_hash: nil
                "92 01 02",                         // token_ids: [1, 2]
                "02",                               // block_size: 2
                "c0",                               // lora_id: nil
                // newer SGLang appends medium: 7 elements, parent = the block above
                "97", "ab 426c6f636b53746f726564",
                "91 cd 1234",                       // block_hashes: [uint16 0x1234]
                "d3 ffffffffffffff85",              // parent_block_hash: -123
                "92 03 cc ff",                      // token_ids: [3, 255]
                "02", "c0",
                "a3 475055",                        // medium: "GPU"
                // BlockRemoved: [tag, block_hashes] and, newer, + medium
                "92", "ac 426c6f636b52656d6f766564", "91 cd 1234",
                "93", "ac 426c6f636b52656d6f766564", "91 d3 ffffffffffffff85", "a3 475055",
                // AllBlocksCleared: [tag]
                "91", "b0 416c6c426c6f636b73436c6561726564",
                "01");                              // attn_dp_rank: 1
        KvEventBatch b = KvEventDecoder.decode(payload);
        assertThat(b.ts()).isEqualTo(1.5);
        assertThat(b.dpRank()).isEqualTo(1);
        assertThat(b.events()).hasSize(5);
        KvEvent.Stored first = (KvEvent.Stored) b.events().get(0);
        assertThat(first.hashes()).containsExactly(-123L);
        assertThat(first.parent()).isEmpty();
        assertThat(first.tokens()).containsExactly(1, 2);
        assertThat(first.blockSize()).isEqualTo(2);
        KvEvent.Stored second = (KvEvent.Stored) b.events().get(1);
        assertThat(second.hashes()).containsExactly(0x1234L);
        assertThat(second.parent()).hasValue(-123L);
        assertThat(second.tokens()).containsExactly(3, 255);
        assertThat(((KvEvent.Removed) b.events().get(2)).hashes()).containsExactly(0x1234L);
        assertThat(((KvEvent.Removed) b.events().get(3)).hashes()).containsExactly(-123L);
        assertThat(b.events().get(4)).isInstanceOf(KvEvent.Cleared.class);
    }

    @Test
    void olderBatchWithoutRankAndUnknownEventsAreSkipped() {
        byte[] payload = hex(
                "92",                               // [ts, events]: attn_dp_rank omitted (None, omit_defaults)
                "cb 0000000000000000",
                "92",
                "92 a9 4e6577457665696e74 01",      // ["NewEveint", 1]: a tag we do not know
                "91 b0 416c6c426c6f636b73436c6561726564");
        KvEventBatch b = KvEventDecoder.decode(payload);
        assertThat(b.dpRank()).isEqualTo(-1);
        assertThat(b.events()).singleElement().isInstanceOf(KvEvent.Cleared.class);
    }

    @Test
    void vllmMapFormWithManyBlocksInOneEvent() {
        byte[] payload = hex(
                "83",                                           // fixmap of 3
                "a2 7473", "cb 3ff0000000000000",               // "ts": 1.0
                "a6 6576656e7473", "91",                        // "events": [ one event ]
                "87",                                           // fixmap of 7
                "a4 74797065", "ab 426c6f636b53746f726564",     // "type": "BlockStored"
                "ac 626c6f636b5f686173686573", "92 07 08",      // "block_hashes": [7, 8]
                "b1 706172656e745f626c6f636b5f68617368", "c0",  // "parent_block_hash": nil
                "a9 746f6b656e5f696473", "94 01 02 03 04",      // "token_ids": [1, 2, 3, 4]
                "aa 626c6f636b5f73697a65", "02",                // "block_size": 2
                "a7 6c6f72615f6964", "c0",                      // "lora_id": nil
                "a6 6d656469756d", "a3 475055",                 // "medium": "GPU"
                "b2 646174615f706172616c6c656c5f72616e6b", "03"); // "data_parallel_rank": 3
        KvEventBatch b = KvEventDecoder.decode(payload);
        assertThat(b.dpRank()).isEqualTo(3);
        KvEvent.Stored s = (KvEvent.Stored) b.events().get(0);
        assertThat(s.hashes()).containsExactly(7L, 8L);
        assertThat(s.tokens()).containsExactly(1, 2, 3, 4);
        assertThat(s.blockSize()).isEqualTo(2);
    }

    @Test
    void garbageIsRefused() {
        assertThatThrownBy(() -> KvEventDecoder.decode(hex("c1"))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> KvEventDecoder.decode(hex("93 cb"))).isInstanceOf(IllegalArgumentException.class);
    }
}
