package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.json;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ArrayValue;
import org.msgpack.value.Value;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * The sim's KV events on the wire, read as a subscriber of SGLang's publisher reads them: real
 * ZMQ over loopback, the frames and the msgpack taken apart with msgpack's generic reader.
 */
class KvEventsPublishTest {
    private static final String SYSTEM = "A system prompt that is long enough for several blocks. ".repeat(8);
    private final SimClient client = new SimClient();

    @Test
    void aPrefillPublishesItsNewBlocksChainedWithTheirTokensAndEvictionsAndClears() throws Exception {
        SimConfig cfg = SimConfig.defaults().withDecodeStep(java.time.Duration.ofMillis(1))
                .withPrefixCacheTokens(1_000_000).withKvEventsEndpoint("tcp://127.0.0.1:*");
        try (SimCluster c = SimCluster.start(0, 1, 0, cfg, SimMode.UNIFIED); ZContext ctx = new ZContext()) {
            UnifiedServer u = c.unified().get(0);
            ZMQ.Socket sub = subscribe(ctx, u.kvEventsEndpoint().orElseThrow());
            List<Frame> first = untilSubscribed(sub, u);
            long seq = first.get(first.size() - 1).seq;
            assertThat(first).allSatisfy(f -> assertThat(f.rank).as("attn_dp_rank").isZero());
            assertThat(first.get(0).events.get(0).get(0).asStringValue().asString()).isEqualTo("AllBlocksCleared");

            ObjectNode body = chat("first question");
            assertThat(client.postNow(u, VllmLegs.CHAT, body).statusCode()).isEqualTo(200);
            Frame stored = next(sub);
            assertThat(stored.seq).as("one more batch, numbered on").isEqualTo(seq + 1);
            String rendered = PromptBlocks.renderChat(body.get("messages"));
            int[] tokens = PromptBlocks.tokens(rendered);
            int blocks = rendered.length() / PromptBlocks.BLOCK_CHARS;
            assertThat(stored.events).hasSize(blocks);
            Long parent = null;
            for (int b = 0; b < blocks; b++) {
                ArrayValue e = stored.events.get(b);
                assertThat(e.size()).as("[tag, block_hashes, parent, token_ids, block_size, lora_id]").isEqualTo(6);
                assertThat(e.get(0).asStringValue().asString()).isEqualTo("BlockStored");
                assertThat(e.get(1).asArrayValue().size()).isEqualTo(1);
                long hash = e.get(1).asArrayValue().get(0).asIntegerValue().asLong();
                assertThat(e.get(2).isNilValue() ? null : e.get(2).asIntegerValue().asLong()).isEqualTo(parent);
                List<Integer> ids = new ArrayList<>();
                e.get(3).asArrayValue().forEach(v -> ids.add(v.asIntegerValue().asInt()));
                assertThat(ids).hasSize(16);
                for (int t = 0; t < 16; t++) {
                    assertThat(ids.get(t)).isEqualTo(tokens[b * 16 + t]);
                }
                assertThat(e.get(4).asIntegerValue().asInt()).isEqualTo(16);
                assertThat(e.get(5).isNilValue()).isTrue();
                parent = hash;
            }

            assertThat(client.postNow(u, VllmLegs.CHAT, chat("second question, " + "longer than the first one ".repeat(4)))
                    .statusCode()).isEqualTo(200);
            Frame more = next(sub);
            assertThat(more.events.size()).as("only the blocks not cached yet").isLessThan(blocks)
                    .isGreaterThan(0);
            assertThat(more.events.get(0).get(2).isNilValue()).as("they hang under the shared blocks").isFalse();

            assertThat(client.postNow(u, "/flush_cache", json("{}")).statusCode()).isEqualTo(200);
            Frame cleared = next(sub);
            assertThat(cleared.events).hasSize(1);
            assertThat(cleared.events.get(0).get(0).asStringValue().asString()).isEqualTo("AllBlocksCleared");
        }
    }

    @Test
    void eachDpRankPublishesItsOwnCacheOnItsOwnPortStampedWithItsRank() throws Exception {
        SimConfig cfg = SimConfig.defaults().withDecodeStep(java.time.Duration.ofMillis(1)).withDpSize(2)
                .withPrefixCacheTokens(1_000_000).withKvEventsEndpoint("tcp://127.0.0.1:*");
        try (SimCluster c = SimCluster.start(0, 1, 0, cfg, SimMode.UNIFIED); ZContext ctx = new ZContext()) {
            UnifiedServer u = c.unified().get(0);
            String rank0 = u.kvEventsEndpoint().orElseThrow();
            ZMQ.Socket sub0 = subscribe(ctx, rank0);
            ZMQ.Socket sub1 = subscribe(ctx, KvEventEndpoints.offset(rank0, 1)); // port + rank, as SGLang
            assertThat(untilSubscribed(sub1, u)).allSatisfy(f -> assertThat(f.rank).isEqualTo(1));
            assertThat(untilSubscribed(sub0, u)).allSatisfy(f -> assertThat(f.rank).isZero());

            ObjectNode body = chat("on rank one");
            body.put("routed_dp_rank", 1);
            assertThat(client.postNow(u, VllmLegs.CHAT, body).statusCode()).isEqualTo(200);
            Frame stored = nextStored(sub1);
            int blocks = PromptBlocks.renderChat(body.get("messages")).length() / PromptBlocks.BLOCK_CHARS;
            assertThat(stored.rank).isEqualTo(1);
            assertThat(stored.events).hasSize(blocks);
            assertThat(stored.seq).as("rank 1's own sequence: its clears, then this").isLessThan(100);

            body.put("routed_dp_rank", 0);
            assertThat(client.postNow(u, VllmLegs.CHAT, body).statusCode()).isEqualTo(200);
            Frame again = nextStored(sub0);
            assertThat(again.rank).isZero();
            assertThat(again.events).as("rank 0's cache is its own: the same prompt is stored anew").hasSize(blocks);
        }
    }

    /** The next batch that stores blocks (the flushes of the subscription may still be on their way). */
    private static Frame nextStored(ZMQ.Socket sub) throws Exception {
        Frame f = next(sub);
        while (f.events.get(0).get(0).asStringValue().asString().equals("AllBlocksCleared")) {
            f = next(sub);
        }
        return f;
    }

    @Test
    void anEvictedBlockIsPublishedAsRemoved() throws Exception {
        SimConfig cfg = SimConfig.defaults().withDecodeStep(java.time.Duration.ofMillis(1))
                .withPrefixCacheTokens(32).withKvEventsEndpoint("tcp://127.0.0.1:*"); // two blocks
        try (SimCluster c = SimCluster.start(0, 1, 0, cfg, SimMode.UNIFIED); ZContext ctx = new ZContext()) {
            UnifiedServer u = c.unified().get(0);
            ZMQ.Socket sub = subscribe(ctx, u.kvEventsEndpoint().orElseThrow());
            untilSubscribed(sub, u);
            ObjectNode body = json("{\"max_tokens\":1}");
            body.put("prompt", "x".repeat(3 * PromptBlocks.BLOCK_CHARS));
            assertThat(client.postNow(u, "/v1/completions", body).statusCode()).isEqualTo(200);
            List<String> tags = new ArrayList<>();
            next(sub).events.forEach(e -> tags.add(e.get(0).asStringValue().asString()));
            assertThat(tags).as("three stored into room for two: the oldest goes")
                    .containsExactly("BlockStored", "BlockStored", "BlockStored", "BlockRemoved");
        }
    }

    private static ObjectNode chat(String question) {
        ObjectNode body = json("{\"max_tokens\":1}");
        ArrayNode messages = body.putArray("messages");
        messages.addObject().put("role", "system").put("content", SYSTEM);
        messages.addObject().put("role", "user").put("content", question);
        return body;
    }

    private static ZMQ.Socket subscribe(ZContext ctx, String endpoint) {
        ZMQ.Socket sub = ctx.createSocket(SocketType.SUB);
        sub.subscribe(new byte[0]);
        sub.setReceiveTimeOut(200);
        // JeroMQ 0.6.0 sometimes never reads the publisher's greeting on a fresh connection (the
        // 10 bytes sit in the receive queue, both I/O threads idle): with its default handshake
        // interval, 30 s, this test's subscriber then heard nothing for 30 s about once in three
        // runs. A 2 s interval makes ZMQ abandon the stalled handshake and connect again, as the
        // gateway's subscriber does (cacheview/EventStream, docs/cache-affinity.md).
        sub.setHandshakeIvl(2_000);
        sub.connect(endpoint);
        return sub;
    }

    /** PUB drops what it sends before the subscription arrives: flush until a clear comes through. */
    private List<Frame> untilSubscribed(ZMQ.Socket sub, SimWorker server) throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        List<Integer> statuses = new ArrayList<>();
        while (System.nanoTime() < deadline) {
            statuses.add(client.postNow(server, "/flush_cache", json("{}")).statusCode());
            ZMsg msg = ZMsg.recvMsg(sub);
            if (msg != null) {
                List<Frame> got = new ArrayList<>(List.of(Frame.of(msg)));
                for (ZMsg m; (m = ZMsg.recvMsg(sub, ZMQ.DONTWAIT)) != null; ) {
                    got.add(Frame.of(m));
                }
                return got;
            }
        }
        throw new AssertionError("no KV event within 30 s; flush statuses " + statuses);
    }

    private static Frame next(ZMQ.Socket sub) throws Exception {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (System.nanoTime() < deadline) {
            ZMsg msg = ZMsg.recvMsg(sub);
            if (msg != null) {
                return Frame.of(msg);
            }
        }
        throw new AssertionError("no KV event within 10 s");
    }

    /** One multipart message: [topic, seq (8 bytes, big-endian), msgpack [ts, events, attn_dp_rank]]. */
    private record Frame(String topic, long seq, List<ArrayValue> events, int rank) {
        static Frame of(ZMsg msg) throws Exception {
            assertThat(msg.size()).isEqualTo(3);
            String topic = msg.pop().getString(ZMQ.CHARSET);
            byte[] seq = msg.pop().getData();
            assertThat(seq).hasSize(8);
            try (MessageUnpacker u = MessagePack.newDefaultUnpacker(msg.pop().getData())) {
                ArrayValue batch = u.unpackValue().asArrayValue();
                assertThat(batch.size()).isEqualTo(3);
                assertThat(batch.get(0).isFloatValue()).as("ts").isTrue();
                List<ArrayValue> events = new ArrayList<>();
                for (Value v : batch.get(1).asArrayValue()) {
                    events.add(v.asArrayValue());
                }
                return new Frame(topic, ByteBuffer.wrap(seq).getLong(), events, batch.get(2).asIntegerValue().asInt());
            }
        }
    }
}
