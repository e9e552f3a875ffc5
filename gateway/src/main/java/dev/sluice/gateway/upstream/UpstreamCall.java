package dev.sluice.gateway.upstream;

import dev.sluice.gateway.routing.Worker;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.util.Objects;

/**
 * One HTTP request to one worker over a pooled connection, and its response delivered piece by
 * piece to an {@link UpstreamListener}. The connection goes back to the pool only after a
 * complete keep-alive exchange; a cancelled or failed call closes it (its state is unknown).
 * Everything happens on the client's event loop.
 */
public final class UpstreamCall {
    private enum State { ACQUIRING, ACTIVE, DONE }

    private final UpstreamPool pool;
    private final Worker worker;
    private final UpstreamListener listener;
    private State state = State.ACQUIRING;
    private Channel channel;
    private FullHttpRequest request;
    private boolean keepAlive = true;
    private boolean paused;
    /** The connection served an earlier exchange (it came from the idle pool). */
    private boolean reused;
    private boolean responseStarted;

    public UpstreamCall(UpstreamPool pool, Worker worker, UpstreamListener listener) {
        this.pool = Objects.requireNonNull(pool, "pool");
        this.worker = Objects.requireNonNull(worker, "worker");
        this.listener = Objects.requireNonNull(listener, "listener");
    }

    public Worker worker() {
        return worker;
    }

    /** Sends {@code request} (ownership passes to this call). */
    public void start(EventLoop loop, FullHttpRequest request) {
        this.request = request;
        // the common case, a pooled idle connection: taken at once, no promise and no listener
        Channel idle = pool.pollIdle(loop, worker);
        if (idle != null) {
            send(idle);
            return;
        }
        pool.acquire(loop, worker).addListener(f -> {
            if (!f.isSuccess()) {
                if (state != State.DONE) {
                    state = State.DONE;
                    releaseRequest();
                    listener.onFailure(new UpstreamFailure(UpstreamFailure.Kind.CONNECT, f.cause().getMessage()));
                }
                return;
            }
            Channel ch = (Channel) f.getNow();
            if (state == State.DONE) {
                // cancelled while we waited for the connection: it is untouched, so it may be pooled
                UpstreamPool.release(ch, true);
                return;
            }
            send(ch);
        });
    }

    private void send(Channel ch) {
        state = State.ACTIVE;
        channel = ch;
        reused = ch.attr(UpstreamPool.SERVED).get() != null;
        ch.attr(UpstreamPool.SERVED).set(Boolean.TRUE);
        ch.attr(UpstreamHandler.CALL).set(this);
        FullHttpRequest req = this.request;
        this.request = null;
        // a failed write reaches UpstreamHandler.exceptionCaught (void promise): onError fails the call
        ch.writeAndFlush(req, ch.voidPromise());
    }

    /** True once the request was handed to a connection: the worker may hold it. */
    public boolean sent() {
        return channel != null;
    }

    /** Stop reading the worker (the client cannot take more); TCP pushes back on the worker. */
    public void pauseReading() {
        if (channel != null && !paused && state == State.ACTIVE) {
            paused = true;
            channel.config().setAutoRead(false);
        }
    }

    public void resumeReading() {
        if (channel != null && paused) {
            paused = false;
            channel.config().setAutoRead(true);
            channel.read();
        }
    }

    /** Abandons the call: the connection is closed, nothing more reaches the listener. */
    public void cancel() {
        if (state == State.DONE) {
            return;
        }
        state = State.DONE;
        releaseRequest();
        if (channel != null) {
            channel.attr(UpstreamHandler.CALL).set(null);
            channel.close();
        }
    }

    void onMessage(HttpObject msg) {
        if (state != State.ACTIVE) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (msg.decoderResult().isFailure()) {
            ReferenceCountUtil.release(msg);
            fail(UpstreamFailure.Kind.MALFORMED, String.valueOf(msg.decoderResult().cause()));
            return;
        }
        responseStarted = true;
        if (msg instanceof HttpResponse head) {
            keepAlive = HttpUtil.isKeepAlive(head);
            try {
                listener.onResponseHead(head);
            } catch (RuntimeException | AssertionError e) {
                ReferenceCountUtil.release(msg);
                listenerFailed(e);
                return;
            }
            if (state != State.ACTIVE) {
                ReferenceCountUtil.release(msg);
                return;
            }
        }
        if (msg instanceof HttpContent content) {
            boolean last = content instanceof LastHttpContent;
            if (last) {
                state = State.DONE;
                channel.attr(UpstreamHandler.CALL).set(null);
                UpstreamPool.release(channel, keepAlive);
            }
            try {
                listener.onContent(content); // the listener owns the content from here, and releases it
            } catch (RuntimeException | AssertionError e) {
                listenerFailed(e);
            }
        }
    }

    /**
     * The listener (the gateway's own code) threw: left to the pipeline, the exception would close the
     * connection as a reset and count against a healthy worker. The connection is closed if this call
     * still holds it (its state is unknown) and the listener hears it as its own error.
     */
    private void listenerFailed(Throwable e) {
        if (state == State.ACTIVE) {
            state = State.DONE;
            channel.attr(UpstreamHandler.CALL).set(null);
            channel.close();
        }
        state = State.DONE;
        listener.onListenerError(e);
    }

    void onClosed() {
        if (state == State.ACTIVE) {
            state = State.DONE;
            if (reused && !responseStarted) {
                UpstreamPool.staleSeen(channel);
            }
            listener.onFailure(new UpstreamFailure(UpstreamFailure.Kind.RESET, reused && !responseStarted
                    ? "reused keep-alive connection closed by the worker before any response byte"
                    : "connection closed before the response completed", reused && !responseStarted));
        }
    }

    void onError(Throwable cause) {
        if (state == State.ACTIVE) {
            fail(UpstreamFailure.Kind.RESET, String.valueOf(cause.getMessage()));
        }
    }

    private void fail(UpstreamFailure.Kind kind, String detail) {
        state = State.DONE;
        if (channel != null && kind == UpstreamFailure.Kind.RESET && reused && !responseStarted) {
            UpstreamPool.staleSeen(channel);
        }
        if (channel != null) {
            channel.attr(UpstreamHandler.CALL).set(null);
            channel.close();
        }
        listener.onFailure(new UpstreamFailure(kind, detail, kind == UpstreamFailure.Kind.RESET && reused && !responseStarted));
    }

    private void releaseRequest() {
        if (request != null) {
            request.release();
            request = null;
        }
    }
}
