package dev.sluice.gateway.pd;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.tracing.RequestTrace;
import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.health.FailureKind;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamFetch;
import io.netty.buffer.ByteBuf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One attempt in vLLM's sequential handoff (NixlConnector / P2P): first the prefill leg (the
 * client's body as a one-token, non-streamed request with {@code kv_transfer_params:
 * {do_remote_decode: true}}), then, with the {@code kv_transfer_params} the prefill answered, the
 * decode leg (the client's own body), whose answer is the client's. One {@code X-Request-Id} on
 * both legs. vLLM has no abort endpoint: closing a leg's connection aborts it. A client that leaves
 * after the prefill answered strands the prefill's KV blocks until vLLM's own timeout
 * ({@code VLLM_NIXL_ABORT_REQUEST_TIMEOUT}): the decode leg is never sent, and it is counted as
 * {@code sluice_aborts_total{cause="stranded_prefill"}}.
 */
final class VllmAttempt extends ConnectionAbortedAttempt {
    private static final Logger log = LoggerFactory.getLogger(VllmAttempt.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private VllmPrefillLeg prefillLeg;
    private DecodeHalf decodeHalf;
    private boolean decodeSent;

    VllmAttempt(RequestScope scope, AttemptKey key) {
        super(scope, key);
    }

    @Override
    boolean send() {
        ByteBuf body = json(WorkerBodies.vllmPrefillLeg(scope.request().body()));
        if (body == null) {
            return false;
        }
        prefillLeg = new VllmPrefillLeg(this, this::prefillAnswered);
        prefillLeg.start(workerRequest(body, prefill, false, RequestTrace.Call.PREFILL,
                ranked() ? DpRankFields.headerRank(prefill, key.ranks().prefillRank(), key.ranks().prefillRanks()) : -1));
        return true;
    }

    /**
     * The prefill answered with the parameters of the KV it holds for us (null: it holds none, its one
     * token ended the request): send the decode leg now. If the request ended meanwhile, a one-token
     * decode leg nobody reads still goes, only to free the prefill's blocks at once instead of after
     * vLLM's abort timeout (480 s).
     */
    void prefillAnswered(ObjectNode kvTransferParams) {
        if (givenUp() || scope.client().ended()) {
            if (kvTransferParams != null) {
                releaseBlocks(kvTransferParams);
            }
            return;
        }
        ByteBuf body = decodeLeg(kvTransferParams);
        if (body == null) {
            failed(AttemptFailure.malformed(ApiError.internal("cannot build the decode leg"), null));
            return;
        }
        scope.services().metrics().vllmHandoff(kvTransferParams == null ? "recomputed" : "transferred");
        decodeSent = true;
        decodeHalf = new DecodeHalf(this);
        decodeStarted(decodeHalf);
        decodeHalf.start(workerRequest(body, decode, scope.request().stream(), RequestTrace.Call.DECODE,
                ranked() ? DpRankFields.headerRank(decode, key.ranks().decodeRank(), key.ranks().decodeRanks()) : -1));
        scope.trace().callAttribute(key, RequestTrace.Call.DECODE, "sluice.vllm.kv_handoff",
                kvTransferParams == null ? "recomputed" : "transferred");
    }

    /**
     * Whether the legs name their engines: each worker routed per engine gets its own rank's
     * {@code X-data-parallel-rank}; the decode needs no word of the prefill's rank, since the prefill's
     * {@code kv_transfer_params} name the engine that holds the KV ({@code remote_engine_id}, which
     * {@code EngineCoreProc.run_engine_core} suffixes {@code _dp<rank>} under data parallelism,
     * vllm-project/vllm@00080ee13c7a451fce071ccb8d0e94d395acf5a7 vllm/v1/engine/core.py; and {@code remote_host}/{@code remote_port}, the side channel of that engine:
     * {@code VLLM_NIXL_SIDE_CHANNEL_PORT + data_parallel_rank} in {@code NixlConnectorScheduler},
     * vllm-project/vllm@002a1057e9ae674d7bdc9c4be95bc29d65d2e808
     * vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py). A batch names none (as in SGLang mode).
     */
    private boolean ranked() {
        return scope.request().batchSize() == 0;
    }

    /** The release leg: fire and forget, bounded by the abort timeout; its answer is read and dropped. */
    private void releaseBlocks(ObjectNode kvTransferParams) {
        String json;
        try {
            json = JSON.writeValueAsString(WorkerBodies.vllmReleaseLeg(scope.request().body(), kvTransferParams));
        } catch (JsonProcessingException e) {
            return;
        }
        AttemptServices services = scope.services();
        services.metrics().vllmHandoff("released");
        UpstreamFetch.postJson(services.pool(), scope.loop(), decode, scope.request().route().path(), json, rid,
                services.abortTimeout()).addListener(f -> {
                    UpstreamFetch.Result r = (UpstreamFetch.Result) f.getNow();
                    if (r.ok()) {
                        log.info("vLLM prefill blocks released rid={} prefill={} decode={} why=\"the request ended "
                                + "between the legs\"", rid, prefill.name(), decode.name());
                    } else {
                        services.metrics().abortCause(AbortCause.STRANDED_PREFILL.label());
                        log.info("stranded prefill rid={} worker={} why=\"the request ended between the vLLM legs and "
                                + "the release leg to {} failed ({}); the prefill holds its KV blocks until "
                                + "VLLM_NIXL_ABORT_REQUEST_TIMEOUT\"", rid, prefill.name(), decode.name(),
                                r.failure() != null ? r.failure() : "status " + r.status());
                    }
                });
    }

    /**
     * A decode leg that never reached its worker (no connection) leaves the prefill's KV blocks
     * waiting for a decode that will not come: stranded until vLLM's timeout, and counted so.
     */
    @Override
    void failed(AttemptFailure f) {
        if (f.culprit() == decode && f.kind() == FailureKind.CONNECT) {
            scope.services().metrics().abortCause(AbortCause.STRANDED_PREFILL.label());
            log.info("stranded prefill rid={} worker={} why=\"the decode leg could not reach {}; the prefill holds its "
                    + "KV blocks until VLLM_NIXL_ABORT_REQUEST_TIMEOUT\"", rid, prefill.name(), decode.name());
        }
        super.failed(f);
    }

    /** The client's bytes with the prefill's kv_transfer_params spliced in, or (tree path) its body rebuilt. */
    private ByteBuf decodeLeg(ObjectNode kvTransferParams) {
        if (kvTransferParams == null) {
            return json(WorkerBodies.vllmDecodeLeg(scope.request().body(), null));
        }
        try {
            ByteBuf spliced = WorkerBodies.spliced(scope.alloc(), scope.request(),
                    "\"kv_transfer_params\":" + JSON.writeValueAsString(kvTransferParams));
            if (spliced != null) {
                return spliced;
            }
        } catch (JsonProcessingException e) {
            return null;
        }
        return json(WorkerBodies.vllmDecodeLeg(scope.request().body(), kvTransferParams));
    }

    private ByteBuf json(ObjectNode node) {
        try {
            byte[] bytes = JSON.writeValueAsBytes(node);
            return scope.alloc().buffer(bytes.length).writeBytes(bytes);
        } catch (JsonProcessingException e) {
            return null;
        }
    }

    @Override
    boolean prefillDone() {
        return prefillLeg != null && prefillLeg.done() && decodeSent;
    }

    @Override
    PdHalf[] parts() {
        return new PdHalf[] {decodeHalf, prefillLeg};
    }
}
