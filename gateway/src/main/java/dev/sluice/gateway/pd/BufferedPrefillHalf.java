package dev.sluice.gateway.pd;

import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.upstream.UpstreamFailure;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.LastHttpContent;

/**
 * A prefill half whose answer is read whole (bounded) and judged once it is complete: SGLang's
 * prefill (dropped but for its status and input logprobs) and vLLM's prefill leg (its
 * {@code kv_transfer_params}). Bytes past the bound are counted as overflow, never kept. Whatever
 * the judgement, the half has ended when it returns (the exchange hears {@code partEnded}).
 */
abstract class BufferedPrefillHalf extends PdHalf {
    final BoundedBody body;
    int status;

    BufferedPrefillHalf(Attempt at, long limit) {
        super(at);
        this.body = new BoundedBody(limit);
    }

    @Override
    final Worker worker() {
        return at.prefill;
    }

    @Override
    public final void onResponseHead(HttpResponse head) {
        status = head.status().code();
    }

    @Override
    public final void onContent(HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        try {
            if (done()) {
                return;
            }
            body.append(content.content());
        } finally {
            content.release();
        }
        if (last) {
            markDone();
            finished(body.toByteArray());
            scope.events().partEnded(at.key);
        }
    }

    @Override
    public final void onFailure(UpstreamFailure failure) {
        if (done()) {
            return;
        }
        failed(connectionFailed(failure));
        scope.events().partEnded(at.key);
    }

    /** The whole answer arrived (this half is already marked done). */
    abstract void finished(byte[] bytes);

    /** This half failed: how it is reported depends on the protocol. */
    abstract void failed(AttemptFailure f);
}
