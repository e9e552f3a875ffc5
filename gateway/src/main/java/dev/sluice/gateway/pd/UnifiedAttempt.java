package dev.sluice.gateway.pd;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamCall;
import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoop;

/**
 * One attempt on a unified worker ({@code disaggregation: none}: a plain SGLang or vLLM server
 * that prefills and decodes itself). The client's body without the gateway-owned fields goes to
 * one worker; its answer is the client's. The prefill is over at the first token. Closing the
 * connection aborts the request on both SGLang and vLLM.
 */
final class UnifiedAttempt extends ConnectionAbortedAttempt {
    private static final ObjectMapper JSON = new ObjectMapper();

    UnifiedAttempt(PdExchange ex, Worker worker, String rid) {
        super(ex, worker, worker, rid);
    }

    @Override
    boolean send(EventLoop loop) {
        ByteBuf body = WorkerBodies.spliced(ex.ctx.alloc(), ex.request, ""); // the client's bytes as they came
        if (body == null) {
            byte[] bytes;
            try {
                bytes = JSON.writeValueAsBytes(WorkerBodies.clientCopy(ex.request.body()));
            } catch (JsonProcessingException e) {
                return false;
            }
            body = ex.ctx.alloc().buffer(bytes.length).writeBytes(bytes);
        }
        decode.acquired();
        decodeHalf = new DecodeHalf(this);
        decodeCall = new UpstreamCall(ex.pd.pool(), decode, decodeHalf);
        decodeCall.start(loop, workerRequest(body, decode, ex.request.stream()));
        return true;
    }

    @Override
    boolean prefillDone() {
        return ex.pastFirstToken();
    }

    @Override
    PdHalf[] parts() {
        return new PdHalf[] {decodeHalf};
    }
}
