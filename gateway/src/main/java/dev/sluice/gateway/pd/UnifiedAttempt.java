package dev.sluice.gateway.pd;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.tracing.RequestTrace;
import dev.sluice.gateway.routing.Worker;
import io.netty.buffer.ByteBuf;

/**
 * One attempt on a unified worker ({@code disaggregation: none}: a plain SGLang or vLLM server
 * that prefills and decodes itself), or a short prompt sent straight to a decode
 * ({@code routing.direct_decode_max_tokens}). The client's body without the gateway-owned fields
 * goes to one worker; its answer is the client's. The prefill is over at the first token. Closing
 * the connection aborts the request on both SGLang and vLLM.
 */
final class UnifiedAttempt extends ConnectionAbortedAttempt {
    private static final ObjectMapper JSON = new ObjectMapper();
    private DecodeHalf decodeHalf;

    UnifiedAttempt(RequestScope scope, AttemptKey key) {
        super(scope, key);
    }

    @Override
    boolean send() {
        // the client's bytes as they came, with the worker's data-parallel rank when it is routed per rank
        dev.sluice.gateway.routing.RankChoice ranks = key.ranks();
        boolean any = ranks.decodeRanked() && scope.request().batchSize() == 0;
        // vLLM takes its rank from a header, SGLang from the body
        int header = any ? DpRankFields.headerRank(decode, ranks.decodeRank(), ranks.decodeRanks()) : -1;
        boolean ranked = any && decode.rankPlan().carrier() == dev.sluice.gateway.routing.RankCarrier.BODY_FIELD;
        ByteBuf body = WorkerBodies.spliced(scope.alloc(), scope.request(), ranked ? DpRankFields.unifiedMembers(ranks) : "");
        if (body == null) {
            byte[] bytes;
            try {
                var copy = WorkerBodies.clientCopy(scope.request().body());
                if (ranked) {
                    copy.put(DpRankFields.ROUTED, ranks.decodeRank());
                }
                bytes = JSON.writeValueAsBytes(copy);
            } catch (JsonProcessingException e) {
                return false;
            }
            body = scope.alloc().buffer(bytes.length).writeBytes(bytes);
        }
        decodeHalf = new DecodeHalf(this);
        decodeStarted(decodeHalf);
        decodeHalf.start(workerRequest(body, decode, scope.request().stream(), RequestTrace.Call.UNIFIED, header));
        return true;
    }

    @Override
    boolean prefillDone() {
        return scope.events().pastFirstToken(key);
    }

    @Override
    PdHalf[] parts() {
        return new PdHalf[] {decodeHalf};
    }
}
