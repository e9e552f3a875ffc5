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
 * One measured client: posts a request on its own connection, parses the answer's SSE as it
 * arrives (or, not streamed, the one JSON answer: its arrival is the first token), times the first
 * content chunk and the gaps between chunks, and gives up, by closing its connection, when no first
 * token came {@code timeout} after sending or no byte came for {@code timeout} after that. Reports
 * exactly one {@link RequestResult}. Confined to its channel's event loop.
 *
 * <p>With {@code readOnAfterGiveUp} the connection is the upstream leg of a router that does not
 * notice its client leaving (mini_lb with a non-streamed request): the give-up is reported, but the
 * answer is still read to its end before the connection closes.
 */
final class ClientStream extends SimpleChannelInboundHandler<HttpObject> {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_ERROR_BODY = 64 << 10;

    private static final int MAX_JSON_BODY = 4 << 20;
    private final int index;
    private final PlannedRequest plan;
    private final boolean readOnAfterGiveUp;
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
    /** A 200 that is not an event stream: a non-streamed answer. */
    private boolean jsonAnswer;
    private final StringBuilder jsonBody = new StringBuilder();
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

    private ClientStream(PlannedRequest plan, boolean readOnAfterGiveUp, long sendNanos, long timeoutNanos,
                         FullHttpRequest request, Consumer<RequestResult> done) {
        this.index = plan.index();
        this.plan = plan;
        this.readOnAfterGiveUp = readOnAfterGiveUp;
        this.sendNanos = sendNanos;
        this.timeoutNanos = timeoutNanos;
        this.request = request;
        this.done = done;
    }

    /** Connects and sends; {@code done} is called once, on an event loop, when the client is done. */
    static void start(io.netty.channel.EventLoopGroup group, java.net.URI base, String path, byte[] body, int index,
                      long sendNanos, long timeoutNanos, Consumer<RequestResult> done) {
        start(group, base, path, body, new PlannedRequest(index, 0, null, timeoutNanos, -1), java.util.Map.of(),
                false, sendNanos, done);
    }

    /**
     * Connects and sends {@code body} with {@code headers}; the client gives up after the plan's
     * patience. {@code done} is called once, on an event loop, when the client is done.
     */
    static Channel start(io.netty.channel.EventLoopGroup group, java.net.URI base, String path, byte[] body,
                         PlannedRequest plan, java.util.Map<String, String> headers, boolean readOnAfterGiveUp,
                         long sendNanos, Consumer<RequestResult> done) {
        FullHttpRequest req = HttpCalls.post(base, path, body);
        headers.forEach((k, v) -> req.headers().set(k, v));
        ClientStream c = new ClientStream(plan, readOnAfterGiveUp, sendNanos, plan.patienceNanos(), req, done);
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
        return f.channel();
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
        if (readOnAfterGiveUp) {
            finish(Outcome.GAVE_UP, gaveUp, null); // the router in between keeps reading the answer
            return;
        }
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
            jsonAnswer = status == 200 && !eventStream;
        }
        if (msg instanceof HttpContent content) {
            lastByteAt = now;
            if (eventStream) {
                sse.feed(content.content(), data -> onData(data, now));
            } else if (jsonAnswer) {
                if (firstTokenAt < 0 && !finished) {
                    firstTokenAt = now; // the whole answer is its first token
                    lastTokenAt = now;
                }
                if (jsonBody.length() < MAX_JSON_BODY) {
                    jsonBody.append(content.content().toString(StandardCharsets.UTF_8));
                }
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
        if (jsonAnswer) {
            answered();
        } else if (!eventStream) {
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

    /** A non-streamed 200: content in its choices counts as the answer (one chunk, no ITL). */
    private void answered() {
        JsonNode body;
        try {
            body = JSON.readTree(jsonBody.toString());
        } catch (Exception e) {
            finish(Outcome.FAILED, "unparseable_answer", "the answer is not JSON");
            return;
        }
        if (body.hasNonNull("error")) {
            JsonNode err = body.get("error");
            finish(Outcome.FAILED, "answer_error", err.isObject() ? err.path("message").asText(err.toString())
                    : err.asText());
            return;
        }
        for (JsonNode choice : body.path("choices")) {
            String text = choice.path("message").path("content").asText(choice.path("text").asText(""));
            if (!text.isEmpty()) {
                chunks = Math.max(chunks, 1);
            }
        }
        JsonNode usage = body.get("usage");
        if (usage != null && usage.has("completion_tokens")) {
            usageTokens = usage.get("completion_tokens").asInt();
        }
        if (chunks == 0) {
            finish(Outcome.FAILED, "empty_answer", "no content in the answer");
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
                Arrays.copyOf(itl, Math.max(0, chunks - 1)), tokens, plan, sendNanos));
    }
}
