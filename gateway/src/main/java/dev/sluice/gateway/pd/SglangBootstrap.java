package dev.sluice.gateway.pd;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.routing.RankChoice;
import dev.sluice.gateway.routing.Worker;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * SGLang's bootstrap pairing: the same body goes to the prefill and the decode, carrying the
 * prefill's bootstrap host and port and a fresh room (one per batch item). These fields and
 * {@code rid} belong to the gateway: whatever the client put there is overwritten, so a client
 * cannot point a decode server at a host of its choosing. {@code kv_transfer_params} (vLLM's
 * handoff) is stripped for the same reason.
 */
public final class SglangBootstrap {
    private SglangBootstrap() {
    }

    /** A room in [0, 2^63-1], as SGLang's routers draw it. */
    public static long newRoom() {
        return ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE;
    }

    /** A fresh room; on a prefill routed per rank, one that {@code bootstrap_room % dp_size} maps to its rank. */
    static long newRoom(RankChoice ranks) {
        return ranks.prefillRanked() ? DpRankFields.room(ranks) : newRoom();
    }

    /**
     * A single request's assignment as JSON members to splice into the client's bytes
     * ({@link WorkerBodies#spliced}); the tree is left alone.
     */
    static String singleFields(Worker prefill, BootstrapAssignment a) {
        Integer port = prefill.bootstrapPort();
        return WorkerBodies.member("bootstrap_host", prefill.host()) + ",\"bootstrap_port\":"
                + (port == null ? "null" : port.toString()) + ",\"bootstrap_room\":" + a.rooms().get(0) + ","
                + WorkerBodies.member("rid", a.rid());
    }

    /** A single request's rid and fresh room. */
    static BootstrapAssignment single(String rid) {
        return single(rid, RankChoice.NONE);
    }

    /** A single request's rid and fresh room (at the prefill's rank). */
    static BootstrapAssignment single(String rid, RankChoice ranks) {
        return new BootstrapAssignment(rid, List.of(rid), List.of(newRoom(ranks)), false);
    }

    /** Rewrites {@code request}'s body in place and says what it wrote. */
    public static BootstrapAssignment assign(GenerationRequest request, Worker prefill, String rid) {
        return assign(request, prefill, rid, RankChoice.NONE);
    }

    /**
     * As above, each room at the prefill's rank when it is routed per rank. The rank fields are the
     * attempt's to add per half ({@link DpRankFields}); a client's are dropped here.
     */
    static BootstrapAssignment assign(GenerationRequest request, Worker prefill, String rid, RankChoice ranks) {
        ObjectNode body = request.body();
        body.remove("kv_transfer_params");
        body.remove(DpRankFields.OWNED);
        body.remove(WorkerBodies.SGLANG_TRACE_CONTEXT); // SGLang would take it before the gateway's traceparent
        int items = request.batchSize();
        if (items == 0) {
            long room = newRoom(ranks);
            body.put("bootstrap_host", prefill.host());
            putPort(body, prefill.bootstrapPort());
            body.put("bootstrap_room", room);
            body.put("rid", rid);
            return new BootstrapAssignment(rid, List.of(rid), List.of(room), false);
        }
        List<String> rids = new ArrayList<>(items);
        List<Long> rooms = new ArrayList<>(items);
        ArrayNode hosts = body.putArray("bootstrap_host");
        ArrayNode ports = body.putArray("bootstrap_port");
        ArrayNode roomArray = body.putArray("bootstrap_room");
        ArrayNode ridArray = body.putArray("rid");
        for (int i = 0; i < items; i++) {
            long room = newRoom(ranks);
            String itemRid = rid + "-" + i;
            rooms.add(room);
            rids.add(itemRid);
            hosts.add(prefill.host());
            if (prefill.bootstrapPort() == null) {
                ports.addNull();
            } else {
                ports.add(prefill.bootstrapPort());
            }
            roomArray.add(room);
            ridArray.add(itemRid);
        }
        return new BootstrapAssignment(rid, rids, rooms, true);
    }

    private static void putPort(ObjectNode body, Integer port) {
        if (port == null) {
            body.putNull("bootstrap_port");
        } else {
            body.put("bootstrap_port", port);
        }
    }
}
