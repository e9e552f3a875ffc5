package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.HttpResponseStatus;

/**
 * Where the answer of a request goes: a client's connection ({@link ChannelClientSink}), or
 * nowhere but a verdict for the gateway's own probe of a suspect pair ({@link ProbeSink}). Either
 * one full response or a committed stream of chunks. Event-loop confined; every buffer handed in
 * becomes the sink's to release.
 */
interface ClientSink {
    /** How long the request waited in the admission queue, on every response whose headers say it. */
    String QUEUE_WAIT_MS = "X-Sluice-Queue-Wait-Ms";

    /**
     * What a rejection the client can no longer get as a status says in the stream: an SSE
     * {@code error} event whose data is the error body (the reason code, and {@code retry_after} in
     * seconds when there is one: the Retry-After header it cannot get), then {@code data: [DONE]}.
     */
    static String errorEvent(ApiError error) {
        com.fasterxml.jackson.databind.node.ObjectNode json = error.toJson();
        if (error.retryAfterSeconds() > 0) {
            ((com.fasterxml.jackson.databind.node.ObjectNode) json.get("error")).put("retry_after",
                    error.retryAfterSeconds());
        }
        return "event: error\ndata: " + json + "\n\ndata: [DONE]\n\n";
    }

    /** Headers (or a whole answer) went out: a retry is no longer possible. */
    boolean committed();

    /** Nothing more is written: the answer is complete, or its reader left. */
    boolean ended();

    /** The status that was sent, or 0. */
    int status();

    /** The reader takes more bytes now (else the decode is paused). */
    boolean writable();

    void sendFull(HttpResponseStatus s, CharSequence contentType, ByteBuf body);

    /** A full error answer, or a last error event in a committed stream. */
    void sendError(ApiError error);

    void commitStream(HttpResponseStatus s, String contentType);

    /** One chunk of a committed stream; ownership of {@code data} passes to the sink. */
    void write(ByteBuf data);

    void end();

    /** The reader left: nothing more is written. */
    void abandon();

    /** The 200 and headers of a stream went out before its first token (queue updates). */
    default boolean opened() {
        return false;
    }

    /** How long the request has waited in the queue so far: the value of {@link #QUEUE_WAIT_MS}. */
    default void queueWait(long millis) {
    }

    /** Opens a stream before its first token (queue updates); a sink without a reader to tell has nothing to open. */
    default void openStream() {
    }

    /** One SSE comment line while a request waits (queue updates). */
    default void comment(String text) {
    }
}
