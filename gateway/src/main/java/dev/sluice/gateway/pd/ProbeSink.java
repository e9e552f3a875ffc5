package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.HttpResponseStatus;

/**
 * The "client" of a stall probe: the gateway itself. It keeps the status and drops the bytes (the
 * probe wants a verdict, not the token). Event-loop confined.
 */
final class ProbeSink implements ClientSink {
    private boolean committed;
    private boolean ended;
    private int status;

    @Override
    public boolean committed() {
        return committed;
    }

    @Override
    public boolean ended() {
        return ended;
    }

    @Override
    public int status() {
        return status;
    }

    @Override
    public boolean writable() {
        return true;
    }

    @Override
    public void sendFull(HttpResponseStatus s, CharSequence contentType, ByteBuf body) {
        body.release();
        if (!ended) {
            committed = true;
            ended = true;
            status = s.code();
        }
    }

    @Override
    public void sendError(ApiError error) {
        if (!ended) {
            status = committed ? status : error.status().code();
            committed = true;
            ended = true;
        }
    }

    @Override
    public void commitStream(HttpResponseStatus s, String contentType) {
        committed = true;
        status = s.code();
    }

    @Override
    public void write(ByteBuf data) {
        data.release();
    }

    @Override
    public void end() {
        ended = true;
    }

    @Override
    public void abandon() {
        ended = true;
    }
}
