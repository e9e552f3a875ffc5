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
}
