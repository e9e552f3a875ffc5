package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A simulated vLLM prefill instance (NixlConnector, sequential handoff). A request whose
 * {@code kv_transfer_params} say {@code do_remote_decode: true} is a prefill leg: it waits in the
 * FCFS prefill queue, is prefilled (prefix cache applied), and is answered at once with a whole
 * completion of one token whose top level carries the {@code kv_transfer_params} a decode needs
 * (this engine's id, the block ids, this server's KV side channel, the engine's request id). The
 * leg counts completed then; its KV blocks stay held in the {@link NixlSideChannel} until a decode
 * reads them or {@code vllmAbortTimeout} passes ({@code strandedKv}). A leg whose client leaves
 * before the answer is aborted and holds nothing; a leg with {@code stream: true} is refused (400:
 * vLLM's proxy never streams it, so a gateway that does is caught). A request without
 * {@code kv_transfer_params} is served in full, prefill then decode, as by any vLLM server.
 */
public final class VllmPrefillServer extends VllmServer {
    private static final Logger log = LoggerFactory.getLogger(VllmPrefillServer.class);
    private final NixlSideChannel sideChannel = new NixlSideChannel(this);
    private volatile String engineId = newEngineId();

    VllmPrefillServer(SimConfig cfg, int ordinal, EventLoop loop) {
        super(cfg, ordinal, loop);
    }

    private static String newEngineId() {
        return UUID.randomUUID().toString();
    }

    @Override
    public boolean isPrefill() {
        return true;
    }

    /** The KV side channel's port ({@code remote_port} in the answers), also while killed. */
    public int kvPort() {
        return sideChannel.port();
    }

    /** This engine's id ({@code remote_engine_id}); a new one after a kill, as a restarted vLLM gets. */
    public String engineId() {
        return engineId;
    }

    void bindSideChannel(EventLoopGroup group, int port) throws InterruptedException {
        sideChannel.bind(group, port);
    }

    @Override
    List<Listener> listeners() {
        List<Listener> all = new ArrayList<>(super.listeners());
        all.addAll(sideChannel.listeners());
        return all;
    }

    @Override
    void killed() {
        super.killed();
        sideChannel.forget();
        engineId = newEngineId();
    }

    @Override
    void validate(GenerationRequest request) throws GenerationRequest.BadRequest {
        super.validate(request);
        KvTransferParams kv = request.kvTransferParams();
        if (kv == null) {
            return;
        }
        if (!kv.raw().isObject() || !kv.doRemoteDecode() || kv.doRemotePrefill()) {
            throw new GenerationRequest.BadRequest("kv_transfer_params: " + kv.raw() + " (expected on a prefill: "
                    + "do_remote_decode true, do_remote_prefill false)");
        }
        if (request.stream()) {
            throw new GenerationRequest.BadRequest("stream: true on a prefill leg (kv_transfer_params."
                    + "do_remote_decode); the prefill answers one whole JSON with the kv_transfer_params");
        }
    }

    @Override
    void admit(Exchange ex) {
        super.admit(ex);
        for (SimItem item : ex.items) {
            scheduler.enqueue(item);
        }
    }

    @Override
    void prefilled(SimItem item) {
        if (item.exchange.request.kvTransferParams() == null) {
            super.prefilled(item); // a plain request: this server decodes it too
            return;
        }
        handOff(item);
    }

    /** The leg's prompt is computed: answer with one token and the params, hold the blocks. */
    private void handOff(SimItem item) {
        Exchange ex = item.exchange;
        item.state = SimItem.State.KV_HELD; // in no queue: ending it below releases nothing
        if (!ex.channel.isActive()) {
            // its client left (the close is not handled yet): vLLM aborts the request, nothing is held
            endItem(item, Outcome.ABORTED, "abort");
            return;
        }
        item.text.append(SimItem.token(0));
        item.generated = 1;
        item.finishReason = "length";
        metrics.tokenGenerated();
        metrics.observeTtft(ex.secondsSinceReceived());
        NixlSideChannel.Held held = sideChannel.hold(item);
        ex.responseExtras = JsonNodeFactory.instance.objectNode();
        ex.responseExtras.set("kv_transfer_params", kvTransferParams(held));
        log.debug("prefill {} kv held rid={} id={} blocks={}", ordinal, item.rid, held.id, held.blocks.length);
        endItem(item, Outcome.COMPLETED, "length");
        ex.itemEnded(item);
    }

    private ObjectNode kvTransferParams(NixlSideChannel.Held held) {
        ObjectNode kv = JsonNodeFactory.instance.objectNode();
        kv.put("do_remote_prefill", true);
        kv.put("do_remote_decode", false);
        kv.put("remote_engine_id", engineId);
        ArrayNode blocks = kv.putArray("remote_block_ids");
        for (int b : held.blocks) {
            blocks.add(b);
        }
        kv.put("remote_host", cfg.host());
        kv.put("remote_port", kvPort());
        kv.put("remote_request_id", held.id);
        kv.put("tp_size", 1);
        return kv;
    }

    /** Held blocks occupy the KV cache ({@code vllm:kv_cache_usage_perc}) though no request runs. */
    @Override
    long tokensHeldNow() {
        return super.tokensHeldNow() + sideChannel.heldTokens();
    }
}
