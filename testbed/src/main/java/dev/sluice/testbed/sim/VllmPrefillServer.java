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

    /**
     * The id of the engine core at data-parallel {@code rank}: with DP each engine's is the configured one
     * suffixed {@code _dp<rank>} ({@code EngineCoreProc.run_engine_core},
     * vllm-project/vllm@00080ee13c7a451fce071ccb8d0e94d395acf5a7 vllm/v1/engine/core.py), so a decode's
     * {@code remote_engine_id} names the rank that holds its KV. (A real engine also listens on a side channel
     * of its own, the base port + its rank; the simulated ranks share one.)
     */
    public String engineId(int rank) {
        return cfg.dpSize() > 1 ? engineId + "_dp" + rank : engineId;
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
        metrics.tokenGenerated();
        metrics.observeTtft(ex.secondsSinceReceived());
        outputProduced();
        if (ex.responseExtras == null) {
            ex.responseExtras = JsonNodeFactory.instance.objectNode();
        }
        if (faults.eosAtFirstToken()) {
            // the one token was EOS or a stop string: the request finished "stop", not length-capped, so
            // NixlConnector.request_finished frees the blocks at once and returns no params
            // (vllm-project/vllm@0f120751344c09af442c1800020908d2b7ff71f2
            // vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py request_finished:
            // request.status != FINISHED_LENGTH_CAPPED -> (False, None))
            item.finishReason = "stop";
            if (item.index == 0) {
                ex.responseExtras.putNull("kv_transfer_params");
            }
            log.debug("prefill {} eos at the first token rid={}: nothing held", ordinal, item.rid);
            endItem(item, Outcome.COMPLETED, "stop");
            ex.itemEnded(item);
            return;
        }
        item.finishReason = "length";
        NixlSideChannel.Held held = sideChannel.hold(item);
        // every request of the body holds its blocks, but the answer carries the params of the first
        // only (vllm-project/vllm@2d5f987dff069848e428593c21df021d02d4282a
        // vllm/entrypoints/openai/serving_completion.py request_output_to_completion_response:
        // kv_transfer_params = final_res_batch[0].kv_transfer_params): the others' blocks strand
        if (item.index == 0) {
            ex.responseExtras.set("kv_transfer_params", kvTransferParams(held));
        }
        log.debug("prefill {} kv held rid={} id={} blocks={}", ordinal, item.rid, held.id, held.blocks.length);
        endItem(item, Outcome.COMPLETED, "length");
        ex.itemEnded(item);
    }

    private ObjectNode kvTransferParams(NixlSideChannel.Held held) {
        ObjectNode kv = JsonNodeFactory.instance.objectNode();
        kv.put("do_remote_prefill", true);
        kv.put("do_remote_decode", false);
        kv.put("remote_engine_id", engineId(held.dpRank));
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

    @Override
    void addHeld(SimMetrics.RankLoad[] ranks) {
        sideChannel.addHeld(ranks);
    }

    /** Held blocks occupy the KV cache ({@code vllm:kv_cache_usage_perc}) though no request runs. */
    @Override
    long tokensHeldNow() {
        return super.tokensHeldNow() + sideChannel.heldTokens();
    }
}
