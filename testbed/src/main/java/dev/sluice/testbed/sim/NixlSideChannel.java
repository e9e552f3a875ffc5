package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The KV blocks one vLLM prefill holds for remote decodes, and the port they are read through
 * (NIXL's side channel, here plain HTTP): {@code GET /kv/{remote_request_id}?engine_id=...} answers
 * 200 with the block ids and frees them (the decode has read them), 404 for an id this engine never
 * held (or another engine id: the prefill restarted), 410 with the reason for blocks already read,
 * failed or freed. Blocks nobody reads are freed after {@code vllmAbortTimeout} and counted in
 * {@code strandedKv}. Under {@code kvFailFraction} (on this prefill, or on the decode, which then
 * asks with {@code sim_fail_transfer=true}) a chosen request's read fails on both sides (500).
 * Its connections live on the prefill's event loop, so the blocks need no locks.
 */
final class NixlSideChannel {
    private static final Logger log = LoggerFactory.getLogger(NixlSideChannel.class);
    private static final int TOMBSTONES = 100_000;
    private static final int BLOCK_ID_RANGE = 1 << 24;

    private final VllmPrefillServer prefill;
    private final Map<String, Held> held = new HashMap<>();
    private final Map<String, String> tombstones = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
            return size() > TOMBSTONES;
        }
    };
    private int nextBlock;
    private long nextId;
    private long heldBlocks;
    private long heldTokens;
    private Listener listener;

    /** The blocks of one answered prefill leg. */
    static final class Held {
        final String id;
        final String rid;
        final int[] blocks;
        final int promptTokens;
        final int dpRank;
        ScheduledFuture<?> timer;

        Held(String id, String rid, int[] blocks, int promptTokens, int dpRank) {
            this.id = id;
            this.rid = rid;
            this.blocks = blocks;
            this.promptTokens = promptTokens;
            this.dpRank = dpRank;
        }
    }

    NixlSideChannel(VllmPrefillServer prefill) {
        this.prefill = prefill;
    }

    void bind(EventLoopGroup group, int port) throws InterruptedException {
        listener = new Listener(prefill.cfg.host(), group, prefill.loop, ch -> ch.pipeline()
                .addLast(new HttpServerCodec()).addLast(new HttpObjectAggregator(64 << 10)).addLast(new KvHandler()));
        listener.bind(port).sync();
    }

    int port() {
        return listener == null ? -1 : listener.port();
    }

    List<Listener> listeners() {
        return listener == null ? List.of() : List.of(listener);
    }

    long heldTokens() {
        return heldTokens;
    }

    /** Held blocks occupy their engine's KV pool (event loop). */
    void addHeld(SimMetrics.RankLoad[] ranks) {
        for (Held h : held.values()) {
            ranks[Math.floorMod(h.dpRank, ranks.length)].usedTokens += h.promptTokens;
        }
    }

    /** Holds the item's KV for a decode; the returned blocks' id is unique on this engine. */
    Held hold(SimItem item) {
        // the engine's own id for the request: the same X-Request-Id twice (a retry) must not collide
        String id = item.rid + "-" + Long.toHexString(++nextId);
        int n = Math.max(1, (item.promptTokens + PrefixCache.BLOCK_TOKENS - 1) / PrefixCache.BLOCK_TOKENS);
        int[] blocks = new int[n];
        for (int i = 0; i < n; i++) {
            blocks[i] = nextBlock;
            nextBlock = (nextBlock + 1) % BLOCK_ID_RANGE;
        }
        Held h = new Held(id, item.rid, blocks, item.promptTokens, item.dpRank);
        held.put(id, h);
        h.timer = prefill.loop.schedule(() -> expired(h), prefill.cfg.vllmAbortTimeout().toNanos(),
                TimeUnit.NANOSECONDS);
        heldBlocks += n;
        heldTokens += item.promptTokens;
        publish();
        return h;
    }

    /** A killed process forgets its blocks: decodes that come for them find nothing. */
    void forget() {
        for (Held h : held.values()) {
            h.timer.cancel(false);
        }
        held.clear();
        tombstones.clear();
        heldBlocks = 0;
        heldTokens = 0;
        publish();
    }

    private void expired(Held h) {
        if (held.get(h.id) != h) {
            return;
        }
        free(h, "KV of request " + h.id + " was freed unread after " + prefill.cfg.vllmAbortTimeout().toMillis()
                + " ms (VLLM_NIXL_ABORT_REQUEST_TIMEOUT)");
        prefill.strandedKv.increment();
        log.info("prefill {} stranded kv rid={} id={} blocks={}", prefill.ordinal, h.rid, h.id, h.blocks.length);
    }

    private void free(Held h, String tombstone) {
        held.remove(h.id);
        h.timer.cancel(false);
        tombstones.put(h.id, tombstone);
        heldBlocks -= h.blocks.length;
        heldTokens -= h.promptTokens;
        publish();
    }

    private void publish() {
        prefill.heldKvRequests = held.size();
        prefill.heldKvBlocks = heldBlocks;
        prefill.publishGauges();
    }

    /**
     * The decode's notification with no block ids: its request ended before it read the KV
     * (NixlConnector.request_finished on the decode: {@code do_remote_prefill} still true adds the
     * request to {@code _reqs_need_recv} with empty block ids, "to avoid stranding the prefill blocks in
     * the prefill instance"; vllm-project/vllm@0f120751344c09af442c1800020908d2b7ff71f2
     * vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py). Not counted as stranded.
     */
    void freeForDecode(String id, String engineId) {
        Held h = held.get(id);
        if (h == null || (engineId != null && !engineId.equals(prefill.engineId(h.dpRank)))) {
            return;
        }
        free(h, "KV of request " + id + " was freed: its decode ended before reading it");
        log.info("prefill {} kv freed by its decode rid={} id={} blocks={}", prefill.ordinal, h.rid, h.id,
                h.blocks.length);
    }

    private void read(Channel ch, String id, String engineId, boolean failTransfer) {
        Held h = held.get(id);
        if (h == null || (engineId != null && !engineId.equals(prefill.engineId(h.dpRank)))) {
            String tomb = h == null ? tombstones.get(id) : null;
            String why = tomb != null ? tomb : "engine " + prefill.engineId() + " holds no KV for request " + id
                    + (engineId == null ? "" : " of engine " + engineId);
            answer(ch, tomb != null ? 410 : 404, id, why, null);
            return;
        }
        if (failTransfer || prefill.faults.kvFails(id.hashCode())) {
            String why = "KV transfer of request " + id + " failed (simulated: kvFailFraction)";
            free(h, why);
            prefill.kvTransferFailures.increment();
            answer(ch, 500, id, why, null);
            return;
        }
        free(h, "KV of request " + id + " was already read");
        answer(ch, 200, id, null, h);
    }

    private void answer(Channel ch, int status, String id, String error, Held h) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("remote_request_id", id);
        o.put("remote_engine_id", h == null ? prefill.engineId() : prefill.engineId(h.dpRank));
        if (h != null) {
            ArrayNode blocks = o.putArray("block_ids");
            for (int b : h.blocks) {
                blocks.add(b);
            }
            o.put("prompt_tokens", h.promptTokens);
        }
        if (error != null) {
            o.put("error", error);
        }
        Responses.json(ch, status, o, false);
    }

    private final class KvHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            QueryStringDecoder uri = new QueryStringDecoder(req.uri());
            String path = uri.path();
            if (path.equals("/health")) {
                Responses.text(ctx.channel(), 200, null, "", true);
                return;
            }
            if (path.startsWith("/free/") && path.length() > 6) {
                List<String> engine = uri.parameters().getOrDefault("engine_id", List.of());
                freeForDecode(path.substring(6), engine.isEmpty() ? null : engine.get(0));
                Responses.text(ctx.channel(), 200, null, "", false);
                return;
            }
            if (path.startsWith("/kv/") && path.length() > 4) {
                Map<String, List<String>> q = uri.parameters();
                List<String> engine = q.getOrDefault("engine_id", List.of());
                read(ctx.channel(), path.substring(4), engine.isEmpty() ? null : engine.get(0),
                        q.getOrDefault(BootstrapServer.FAIL_PARAM, List.of()).contains("true"));
                return;
            }
            Responses.json(ctx.channel(), 404, Responses.vllmError(404, "NotFoundError", "Not Found: " + path), false);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
