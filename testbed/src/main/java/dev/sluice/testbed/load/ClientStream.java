package dev.sluice.testbed.load;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.testbed.load.RequestResult.Outcome;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * One measured client: posts a streaming request on its own connection, parses the answer's SSE
 * as it arrives, times the first content chunk and the gaps between chunks, and gives up, by
 * closing its connection, when no first token came {@code timeout} after sending or no byte came
 * for {@code timeout} after that. Reports exactly one {@link RequestResult}. Confined to its
 * channel's event loop.
 */
final class ClientStream extends SimpleChannelInboundHandler<HttpObject> {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_ERROR_BODY = 64 << 10;

    private final int index;
    private final long sendNanos;
    private final long timeoutNanos;
    private final FullHttpRequest request;
    private final Consumer<RequestResult> done;
    private final SseLines sse = new SseLines();
    private final StringBuilder errorBody = new StringBuilder();
    private Channel channel;
    private ScheduledFuture<?> timer;
    private int status;
    private String retryAfter;
    private boolean eventStream;
    private long firstTokenAt = -1;
    private long lastTokenAt;
    private long lastByteAt;
    private long[] itl = new long[64];
    private int chunks;
    private int usageTokens = -1;
    private boolean sawDone;
    private String streamError;
    private String gaveUp;
    private boolean finished;

    private ClientStream(int index, long sendNanos, long timeoutNanos, FullHttpRequest request,
                         Consumer<RequestResult> done) {
        this.index = index;
        this.sendNanos = sendNanos;
        this.timeoutNanos = timeoutNanos;
        this.request = request;
        this.done = done;
    }

    /** Connects and sends; {@code done} is called once, on an event loop, when the client is done. */
    static void start(io.netty.channel.EventLoopGroup group, java.net.URI base, String path, byte[] body, int index,
                      long sendNanos, long timeoutNanos, Consumer<RequestResult> done) {
        ClientStream c = new ClientStream(index, sendNanos, timeoutNanos, HttpCalls.post(base, path, body), done);
        ChannelFuture f = HttpCalls.open(group, base, c);
        c.channel = f.channel();
        f.channel().eventLoop().execute(c::armFirstTokenDeadline);
        f.addListener(x -> {
            if (!x.isSuccess()) {
                c.request.release();
                c.finish(Outcome.FAILED, "connection", String.valueOf(x.cause()));
            }
        });
        f.channel().closeFuture().addListener(x -> c.closed());
    }

    private void armFirstTokenDeadline() {
        timer = channel.eventLoop().schedule(this::timeUp, sendNanos + timeoutNanos - System.nanoTime(),
                TimeUnit.NANOSECONDS);
    }

    private void timeUp() {
        timer = null;
        if (finished) {
            return;
        }
        if (firstTokenAt >= 0) {
            long idle = System.nanoTime() - lastByteAt;
            if (idle < timeoutNanos) { // bytes came meanwhile: wait for the rest of the idle window
                timer = channel.eventLoop().schedule(this::timeUp, timeoutNanos - idle, TimeUnit.NANOSECONDS);
                return;
            }
        }
        gaveUp = firstTokenAt < 0 ? "before_first_token" : "mid_stream";
        channel.close(); // what a client that stops waiting does; closed() reports it
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        ctx.writeAndFlush(request);
        ctx.fireChannelActive();
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) {
        long now = System.nanoTime();
        if (msg instanceof HttpResponse res) {
            status = res.status().code();
            retryAfter = res.headers().get(HttpHeaderNames.RETRY_AFTER);
            String type = res.headers().get(HttpHeaderNames.CONTENT_TYPE, "");
            eventStream = status == 200 && type.startsWith("text/event-stream");
        }
        if (msg instanceof HttpContent content) {
            lastByteAt = now;
            if (eventStream) {
                sse.feed(content.content(), data -> onData(data, now));
            } else if (errorBody.length() < MAX_ERROR_BODY) {
                errorBody.append(content.content().toString(StandardCharsets.UTF_8));
            }
            if (msg instanceof LastHttpContent) {
                ended();
                ctx.close();
            }
        }
    }

    private void onData(String data, long now) {
        if (data.equals("[DONE]")) {
            sawDone = true;
            return;
        }
        JsonNode event;
        try {
            event = JSON.readTree(data);
        } catch (Exception e) {
            streamError = "unparseable event: " + data;
            return;
        }
        if (event.hasNonNull("error")) {
            JsonNode err = event.get("error");
            streamError = err.isObject() ? err.path("message").asText(err.toString()) : err.asText();
            return;
        }
        for (JsonNode choice : event.path("choices")) {
            String text = choice.path("delta").path("content").asText(choice.path("text").asText(""));
            if (!text.isEmpty()) {
                token(now);
            }
        }
        JsonNode usage = event.get("usage");
        if (usage != null && usage.has("completion_tokens")) {
            usageTokens = usage.get("completion_tokens").asInt();
        }
    }

    private void token(long now) {
        if (firstTokenAt < 0) {
            firstTokenAt = now;
        } else {
            if (chunks - 1 >= itl.length) {
                itl = Arrays.copyOf(itl, itl.length * 2);
            }
            itl[chunks - 1] = now - lastTokenAt;
        }
        lastTokenAt = now;
        chunks++;
    }

    private void ended() {
        if (!eventStream) {
            String code = null;
            String message = errorBody.toString();
            try {
                JsonNode body = JSON.readTree(message);
                JsonNode err = body.has("error") ? body.get("error") : body; // OpenAI style, or SGLang's flat one
                code = err.hasNonNull("code") ? err.get("code").asText() : null;
                message = err.path("message").asText(message);
            } catch (Exception e) {
                // not JSON: keep the raw text
            }
            if (RequestResult.isRejection(status)) {
                finish(Outcome.REJECTED, null, message, code);
            } else {
                finish(Outcome.FAILED, "http_" + status, message, code);
            }
        } else if (streamError != null) {
            finish(Outcome.FAILED, "stream_error", streamError);
        } else if (!sawDone) {
            finish(Outcome.FAILED, "incomplete", "the stream ended without [DONE]");
        } else if (chunks == 0) {
            finish(Outcome.FAILED, "empty_stream", "no content in the stream");
        } else {
            finish(Outcome.COMPLETED, null, null);
        }
    }

    private void closed() {
        if (gaveUp != null) {
            finish(Outcome.GAVE_UP, gaveUp, null);
        } else {
            finish(Outcome.FAILED, "connection", "the connection closed before the answer ended");
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (!finished) {
            finish(Outcome.FAILED, "connection", cause.toString());
        }
        ctx.close();
    }

    private void finish(Outcome outcome, String kind, String message) {
        finish(outcome, kind, message, null);
    }

    private void finish(Outcome outcome, String kind, String message, String code) {
        if (finished) {
            return;
        }
        finished = true;
        if (timer != null) {
            timer.cancel(false);
        }
        long end = System.nanoTime();
        int tokens = usageTokens >= 0 ? usageTokens : chunks;
        done.accept(new RequestResult(index, outcome, status, code, retryAfter, kind, message,
                firstTokenAt < 0 ? -1 : firstTokenAt - sendNanos, end - sendNanos,
                Arrays.copyOf(itl, Math.max(0, chunks - 1)), tokens));
    }
}
