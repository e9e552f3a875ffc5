package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The KV handoff endpoint of one prefill (its "bootstrap port"). A decode long-polls
 * {@code GET /kv/{room}}: the answer is 200 once the prefill has computed that room's KV, or 410
 * with a reason when the room was aborted or failed there. A decode may ask before the prefill has
 * even received its half of the request (dispatch is concurrent); it then waits too. Its
 * connections live on the prefill's event loop, so rooms need no locks.
 */
final class BootstrapServer {
    private static final int TOMBSTONES = 100_000;

    private final PrefillServer prefill;
    private final Map<Long, Room> rooms = new HashMap<>();
    /** Why a finished room can no longer be fetched, for decodes that ask late. */
    private final Map<Long, String> tombstones = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, String> eldest) {
            return size() > TOMBSTONES;
        }
    };
    private Channel serverChannel;

    private static final class Room {
        SimItem item;
        final ArrayDeque<Channel> waiters = new ArrayDeque<>();
    }

    BootstrapServer(PrefillServer prefill) {
        this.prefill = prefill;
    }

    void bind(EventLoopGroup group, int port) throws InterruptedException {
        serverChannel = new ServerBootstrap().group(group, prefill.loop).channel(Transport.serverChannel())
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec()).addLast(new HttpObjectAggregator(64 << 10))
                                .addLast(new KvHandler());
                    }
                })
                .bind(prefill.cfg.host(), port).sync().channel();
    }

    int port() {
        return ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    Channel serverChannel() {
        return serverChannel;
    }

    void register(SimItem item) {
        tombstones.remove(item.room);
        rooms.computeIfAbsent(item.room, r -> new Room()).item = item;
    }

    /** The item's KV is ready; true when a waiting decode took it at once. */
    boolean kvReady(SimItem item) {
        Room room = rooms.get(item.room);
        if (room == null || room.item != item) {
            return false;
        }
        Channel waiter = nextActiveWaiter(room);
        if (waiter == null) {
            return false;
        }
        deliver(item, room, waiter);
        return true;
    }

    /** The item ended on the prefill without a transfer: every decode waiting for its room fails. */
    void dropped(SimItem item, String reason) {
        Room room = rooms.get(item.room);
        if (room == null || room.item != item) {
            return;
        }
        rooms.remove(item.room);
        tombstones.put(item.room, reason);
        for (Channel waiter : room.waiters) {
            answer(waiter, 410, reason, item);
        }
    }

    private Channel nextActiveWaiter(Room room) {
        Channel ch;
        while ((ch = room.waiters.pollFirst()) != null) {
            if (ch.isActive()) {
                return ch;
            }
        }
        return null;
    }

    private void deliver(SimItem item, Room room, Channel waiter) {
        rooms.remove(item.room);
        tombstones.put(item.room, "KV of room " + item.room + " was already transferred");
        answer(waiter, 200, null, item);
        for (Channel other : room.waiters) {
            answer(other, 409, "KV of room " + item.room + " was already transferred", item);
        }
        prefill.kvTransferred(item);
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

    private void fetch(Channel ch, long roomId) {
        String tomb = tombstones.get(roomId);
        if (tomb != null) {
            ObjectNode o = JsonNodeFactory.instance.objectNode().put("room", roomId).put("error", tomb);
            Responses.json(ch, 410, o, false);
            return;
        }
        Room room = rooms.computeIfAbsent(roomId, r -> new Room());
        room.waiters.addLast(ch);
        if (room.item != null && room.item.state == SimItem.State.KV_HELD) {
            room.item.cancelTimer(); // the bootstrap timeout no longer applies
            deliver(room.item, room, nextActiveWaiter(room));
            return;
        }
        ch.closeFuture().addListener(f -> waiterGone(roomId, ch));
    }

    private void waiterGone(long roomId, Channel ch) {
        Room room = rooms.get(roomId);
        if (room != null) {
            room.waiters.remove(ch);
            if (room.item == null && room.waiters.isEmpty()) {
                rooms.remove(roomId);
            }
        }
    }

    private final class KvHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            String path = new QueryStringDecoder(req.uri()).path();
            if (path.equals("/health")) {
                Responses.text(ctx.channel(), 200, null, "", true);
                return;
            }
            if (path.startsWith("/kv/")) {
                try {
                    fetch(ctx.channel(), Long.parseLong(path.substring(4)));
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
