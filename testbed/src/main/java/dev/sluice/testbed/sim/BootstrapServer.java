package dev.sluice.testbed.sim;

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
import io.netty.util.AttributeKey;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The KV handoff endpoint of one prefill (its "bootstrap port"). A decode long-polls
 * {@code GET /kv/{room}}: the answer is 200 once the prefill has computed that room's KV, or 410
 * with a reason when the room was aborted or failed there. A decode may ask before the prefill has
 * even received its half of the request (dispatch is concurrent); it then waits too. Its
 * connections live on the prefill's event loop, so rooms need no locks.
 *
 * <p>A decode that aborts (or whose client disconnects) while it waits closes its long poll. The
 * room then remembers that its peer has gone, as SGLang's prefill learns it from its transfer
 * backend: when the prefill finishes computing that room, its transfer fails at once (a KV
 * transfer error) instead of holding the KV until the bootstrap timeout. A decode that never
 * asked at all is still waited for, up to the bootstrap timeout.
 *
 * <p>Under {@code kvFailFraction} (on this prefill, or on the decode, which then asks with
 * {@code sim_fail_transfer=true}) the handoff of a chosen room fails on both sides: the decode gets
 * a 500 (its KV transfer error) and the prefill fails the request with a KV transfer error.
 *
 * <p>A decode under {@code kvStall} asks with {@code sim_stall_transfer=true}: once the KV is
 * computed its transfer starts and never ends (see {@link #stall}).
 */
final class BootstrapServer {
    private static final int TOMBSTONES = 100_000;
    /** Query parameter of a decode whose transfer of this room is to fail ({@code kvFailFraction}). */
    static final String FAIL_PARAM = "sim_fail_transfer";
    private static final AttributeKey<Boolean> FAIL_TRANSFER = AttributeKey.valueOf("simFailTransfer");
    /** Query parameter of a decode whose transfer of this room starts and never ends ({@code kvStall}). */
    static final String STALL_PARAM = "sim_stall_transfer";
    /**
     * Query parameter: the prefill DP rank the decode expects the room's KV on ({@link DpDispatch}). A
     * room computed on another rank fails its transfer, as SGLang's decode then talks to the wrong
     * rank's KV sender and never gets the room.
     */
    static final String RANK_PARAM = "sim_prefill_dp_rank";
    private static final AttributeKey<Integer> EXPECTED_RANK = AttributeKey.valueOf("simExpectedPrefillRank");
    private static final AttributeKey<Boolean> STALL_TRANSFER = AttributeKey.valueOf("simStallTransfer");
    /**
     * SGLang's bootstrap host for requests that transfer nothing (health checks, warmups): it selects the
     * fake transfer backend on both halves (sgl-project/sglang@000eaffacf048e51b64d4d72985ef8f0b7054b39
     * python/sglang/srt/disaggregation/utils.py FAKE_BOOTSTRAP_HOST, get_kv_class).
     */
    static final String FAKE_BOOTSTRAP_HOST = "2.2.2.2";

    private final PrefillServer prefill;
    private final Map<RoomKey, Room> rooms = new HashMap<>();
    /** Why a finished room can no longer be fetched, for decodes that ask late. */
    private final Map<RoomKey, String> tombstones = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<RoomKey, String> eldest) {
            return size() > TOMBSTONES;
        }
    };
    /** Rooms whose decode peer asked and left before the prefill had the request. */
    private final Map<RoomKey, Boolean> departedPeers = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<RoomKey, Boolean> eldest) {
            return size() > TOMBSTONES;
        }
    };
    private Listener listener;

    /**
     * A room and the parallel sample it is for: with n > 1 SGLang sends the n samples of a prompt with
     * the same bootstrap_room (tokenizer_manager.py _handle_batch_request), so the simulator pairs the
     * k-th sample of a room on the prefill with the k-th on the decode.
     */
    record RoomKey(long room, int sample) {
        static RoomKey of(SimItem item) {
            return new RoomKey(item.room, item.sample);
        }
    }

    /** Query parameter naming the parallel sample a decode fetches (0 when absent). */
    static final String SAMPLE_PARAM = "sample";

    /** What became of an item whose KV is ready. */
    enum Handoff { DELIVERED, PEER_GONE, WAIT }

    private static final class Room {
        SimItem item;
        final ArrayDeque<Channel> waiters = new ArrayDeque<>();
        /** A decode asked for this room and its connection closed unanswered; no other one waits. */
        boolean peerGone;
        /** The long poll of a decode whose transfer started and stalls ({@code kvStall}); never answered 200. */
        Channel stalledTransfer;
    }

    BootstrapServer(PrefillServer prefill) {
        this.prefill = prefill;
    }

    void bind(EventLoopGroup group, int port) throws InterruptedException {
        listener = new Listener(prefill.cfg.host(), group, prefill.loop, ch -> ch.pipeline()
                .addLast(new HttpServerCodec()).addLast(new HttpObjectAggregator(64 << 10)).addLast(new KvHandler()));
        listener.bind(port).sync();
    }

    /** The bootstrap port, also while killed; -1 before the first bind. */
    int port() {
        return listener == null ? -1 : listener.port();
    }

    Channel serverChannel() {
        return listener == null ? null : listener.serverChannel();
    }

    List<Listener> listeners() {
        return listener == null ? List.of() : List.of(listener);
    }

    /**
     * After a kill (its connections closed, its items ended): a restarted prefill knows no room,
     * and the close listeners of the killed long polls then find none to mark.
     */
    void forget() {
        rooms.clear();
        tombstones.clear();
        departedPeers.clear();
    }

    /** Long polls open for a room (event loop only; tests submit it there). */
    int waiters(long roomId) {
        Room room = rooms.get(new RoomKey(roomId, 0));
        return room == null ? 0 : room.waiters.size();
    }

    /** Whether a decode that asked for the room has left (event loop only). */
    boolean peerGone(long roomId) {
        RoomKey key = new RoomKey(roomId, 0);
        Room room = rooms.get(key);
        return room != null ? room.peerGone : departedPeers.containsKey(key);
    }

    void register(SimItem item) {
        tombstones.remove(RoomKey.of(item));
        Room room = rooms.computeIfAbsent(RoomKey.of(item), r -> new Room());
        room.item = item;
        if (departedPeers.remove(RoomKey.of(item)) != null && room.waiters.isEmpty()) {
            room.peerGone = true;
        }
    }

    /** The item's KV is ready: a waiting decode takes it, or its decode has gone, or it must wait. */
    Handoff kvReady(SimItem item) {
        Room room = rooms.get(RoomKey.of(item));
        if (room == null || room.item != item) {
            return Handoff.WAIT;
        }
        Channel waiter = nextActiveWaiter(room);
        if (waiter == null) {
            return room.peerGone ? Handoff.PEER_GONE : Handoff.WAIT;
        }
        deliver(item, room, waiter);
        return Handoff.DELIVERED;
    }

    /** The item ended on the prefill without a transfer: every decode waiting for its room fails. */
    void dropped(SimItem item, String reason) {
        Room room = rooms.get(RoomKey.of(item));
        if (room == null || room.item != item) {
            return;
        }
        rooms.remove(RoomKey.of(item));
        tombstones.put(RoomKey.of(item), reason);
        for (Channel waiter : room.waiters) {
            answer(waiter, 410, reason, item);
        }
        if (room.stalledTransfer != null && room.stalledTransfer.isActive()) {
            // the prefill's failure reaches the decode over the control path, not the stuck data path
            answer(room.stalledTransfer, 410, reason, item);
        }
    }

    private Channel nextActiveWaiter(Room room) {
        Channel ch;
        while ((ch = room.waiters.pollFirst()) != null) {
            if (ch.isActive()) {
                return ch;
            }
            room.peerGone = true; // closed, its close listener has not run yet
        }
        return null;
    }

    private void deliver(SimItem item, Room room, Channel waiter) {
        if (waiter.hasAttr(STALL_TRANSFER)) {
            stall(item, room, waiter);
            return;
        }
        rooms.remove(RoomKey.of(item));
        Integer expectedRank = waiter.attr(EXPECTED_RANK).get();
        boolean wrongRank = expectedRank != null && expectedRank != item.dpRank;
        boolean fail = prefill.faults.kvFails(item.room) || waiter.hasAttr(FAIL_TRANSFER) || wrongRank;
        String gone = wrongRank ? "KV transfer of room " + item.room + " failed: the decode expected it on prefill "
                + "dp rank " + expectedRank + ", it was computed on rank " + item.dpRank
                : fail ? "KV transfer of room " + item.room + " failed (simulated: kvFailFraction)"
                : "KV of room " + item.room + " was already transferred";
        tombstones.put(RoomKey.of(item), gone);
        answer(waiter, fail ? 500 : 200, fail ? gone : null, item);
        for (Channel other : room.waiters) {
            answer(other, 409, gone, item);
        }
        if (fail) {
            prefill.transferFailed(item, gone);
        } else {
            prefill.kvTransferred(item);
        }
    }

    /**
     * {@code kvStall}: the transfer of the item's KV starts and never ends. The item stays computed and
     * unanswered in the prefill's inflight queue (no bootstrap timeout: the handshake is done) until the
     * decode gives up the room (its long poll closes: an abort, its client leaving, its {@code kvWait})
     * and the transfer fails here, or until the item ends on this prefill ({@link #dropped}).
     */
    private void stall(SimItem item, Room room, Channel waiter) {
        room.stalledTransfer = waiter;
        for (Channel other : room.waiters) {
            answer(other, 409, "KV of room " + item.room + " is being transferred to another decode", item);
        }
        room.waiters.clear();
        RoomKey key = RoomKey.of(item);
        waiter.closeFuture().addListener(f -> transferAbandoned(key, waiter));
    }

    /** The decode of a stalled transfer closed its long poll: the transfer fails on the prefill too. */
    private void transferAbandoned(RoomKey key, Channel ch) {
        Room room = rooms.get(key);
        if (room == null || room.stalledTransfer != ch || room.item == null) {
            return;
        }
        prefill.transferFailed(room.item, "the decode gave up the stalled transfer of room " + key.room()
                + " (aborted, its client left, or its waiting timeout passed)");
    }

    private void answer(Channel ch, int status, String error, SimItem item) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        if (item != null) {
            o.put("room", item.room);
            o.put("rid", item.rid);
            o.put("prompt_tokens", item.promptTokens);
        }
        if (error != null) {
            o.put("error", error);
        }
        Responses.json(ch, status, o, false);
    }

    private void fetch(Channel ch, long roomId, int sample, boolean failTransfer, boolean stallTransfer,
                       Integer expectedRank) {
        RoomKey key = new RoomKey(roomId, sample);
        if (expectedRank != null) {
            ch.attr(EXPECTED_RANK).set(expectedRank);
        }
        if (failTransfer) {
            ch.attr(FAIL_TRANSFER).set(Boolean.TRUE);
        }
        if (stallTransfer) {
            ch.attr(STALL_TRANSFER).set(Boolean.TRUE);
        }
        String tomb = tombstones.get(key);
        if (tomb != null) {
            ObjectNode o = JsonNodeFactory.instance.objectNode().put("room", roomId).put("error", tomb);
            Responses.json(ch, 410, o, false);
            return;
        }
        Room room = rooms.computeIfAbsent(key, r -> new Room());
        if (room.stalledTransfer != null) {
            ObjectNode o = JsonNodeFactory.instance.objectNode().put("room", roomId)
                    .put("error", "KV of room " + roomId + " is being transferred to another decode");
            Responses.json(ch, 409, o, false);
            return;
        }
        room.waiters.addLast(ch);
        room.peerGone = false; // a decode (again) waits for this room
        departedPeers.remove(key);
        if (room.item != null && room.item.state == SimItem.State.KV_HELD) {
            room.item.cancelTimer(); // the bootstrap timeout no longer applies
            deliver(room.item, room, nextActiveWaiter(room));
            return;
        }
        ch.closeFuture().addListener(f -> waiterGone(key, ch));
    }

    /** A long poll closed; unless it was answered (its room is gone then), its decode has left. */
    private void waiterGone(RoomKey key, Channel ch) {
        Room room = rooms.get(key);
        if (room == null || !room.waiters.remove(ch) || !room.waiters.isEmpty()) {
            return;
        }
        if (room.item == null) {
            rooms.remove(key);
            departedPeers.put(key, Boolean.TRUE);
        } else {
            room.peerGone = true;
        }
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
            if (path.startsWith("/kv/")) {
                try {
                    List<String> fail = uri.parameters().getOrDefault(FAIL_PARAM, List.of());
                    List<String> stall = uri.parameters().getOrDefault(STALL_PARAM, List.of());
                    List<String> sample = uri.parameters().getOrDefault(SAMPLE_PARAM, List.of("0"));
                    List<String> rank = uri.parameters().getOrDefault(RANK_PARAM, List.of());
                    fetch(ctx.channel(), Long.parseLong(path.substring(4)), Integer.parseInt(sample.get(0)),
                            fail.contains("true"), stall.contains("true"),
                            rank.isEmpty() ? null : Integer.valueOf(rank.get(0)));
                    return;
                } catch (NumberFormatException e) {
                    // falls through to 404
                }
            }
            Responses.json(ctx.channel(), 404, Responses.error(404, "NotFoundError", "Not Found: " + path), false);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
