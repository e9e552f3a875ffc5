package dev.sluice.gateway.upstream;

import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;

/** Receives one upstream response. Runs on the event loop of the client that started the call. */
public interface UpstreamListener {
    /** The status line and headers. */
    void onResponseHead(HttpResponse head);

    /** A body chunk; the listener owns it and must release it. The last one is a {@code LastHttpContent}. */
    void onContent(HttpContent content);

    /** The call failed before its response completed; nothing more follows. */
    void onFailure(UpstreamFailure failure);

    /**
     * This listener threw while handling the response: a bug of the gateway's, not a failure of the
     * worker's. The call has closed its connection (its state is unknown); nothing more follows.
     */
    void onListenerError(Throwable error);
}
