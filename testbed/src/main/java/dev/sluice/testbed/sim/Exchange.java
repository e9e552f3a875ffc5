package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import java.util.ArrayList;
import java.util.List;

/**
 * One HTTP generation request on one connection and its response, streamed or whole. Its items
 * live in the worker's queues; the exchange only turns their progress into bytes. Confined to the
 * server's event loop.
 */
final class Exchange {
    final SimWorker worker;
    final Channel channel;
    final GenerationRequest request;
    final WireFormat format;
    final boolean keepAlive;
    final long receivedNanos;
    /** Wall clock when the request arrived, to place the client's epoch give-up time on receivedNanos's clock. */
    final long receivedEpochMillis = System.currentTimeMillis();
    final long createdEpochSeconds = receivedEpochMillis / 1000;
    final List<SimItem> items = new ArrayList<>();
    private int liveItems;
    private boolean headersSent;
    private boolean ended;
    /** Set when the server closed the connection on purpose (dropAfterTokens): its items failed. */
    boolean dropped;
    /** Top-level fields added to the whole JSON answer (a vLLM prefill leg's {@code kv_transfer_params}). */
    ObjectNode responseExtras;
    /** When the server hears that the client left ({@link AbortOnDisconnect#SGLANG}). */
    private final DisconnectWatch disconnect;

    Exchange(SimWorker worker, Channel channel, GenerationRequest request, boolean keepAlive, long receivedNanos) {
        this.worker = worker;
        this.channel = channel;
        this.request = request;
        this.format = request.route() == Route.GENERATE ? GenerateFormat.INSTANCE : OpenAiFormat.INSTANCE;
        this.keepAlive = keepAlive;
        this.receivedNanos = receivedNanos;
        for (GenerationRequest.Item spec : request.items()) {
            items.add(new SimItem(this, spec));
        }
        this.liveItems = items.size();
        this.disconnect = new DisconnectWatch(this);
    }

    String model() {
        return worker.config().model();
    }

    boolean ended() {
        return ended;
    }

    /** Streams send their headers as soon as the request is accepted. */
    void begin() {
        if (request.stream()) {
            headersSent = true;
            SseWriter.headers(channel);
        }
    }

    void send(JsonNode event) {
        if (!ended && event != null) {
            SseWriter.event(channel, event);
        }
    }

    /** An item finished (completed or aborted): stream its closing event; answer when all are done. */
    void itemEnded(SimItem item) {
        if (ended) {
            return;
        }
        if (request.stream()) {
            send(format.finishEvent(this, item));
        }
        if (--liveItems > 0) {
            return;
        }
        ended = true;
        disconnect.cancel();
        if (request.stream()) {
            if (request.includeUsage()) {
                JsonNode usage = format.usageEvent(this);
                if (usage != null) {
                    SseWriter.event(channel, usage);
                }
            }
            finishStream();
        } else {
            JsonNode body = format.fullResponse(this);
            if (responseExtras != null && body instanceof ObjectNode o) {
                o.setAll(responseExtras);
            }
            Responses.json(channel, 200, body, keepAlive);
        }
    }

    /**
     * The request failed: the other items end too, and the client gets an error (a JSON error with
     * {@code status}, or, once the stream has started, an error event and {@code [DONE]}).
     */
    void fail(int status, String type, String message) {
        if (ended) {
            return;
        }
        ended = true;
        disconnect.cancel();
        for (SimItem other : items) {
            if (other.live()) {
                worker.endItem(other, SimWorker.Outcome.FAILED, null);
            }
        }
        if (!worker.isVllm()) {
            sglangAbort(status, type, message);
            return;
        }
        if (headersSent) {
            SseWriter.event(channel, Responses.streamError(status, type, message));
            finishStream();
        } else {
            Responses.json(channel, status, worker.errorBody(status, type, message), keepAlive);
        }
    }

    /**
     * SGLang ends a request the server failed (a KV transfer or bootstrap failure, a full queue) with
     * {@code FINISH_ABORT(message, status_code)} (sgl-project/sglang@fd3907ee4618e96b73ee94d9a836db78efb5d046
     * python/sglang/srt/managers/schedule_batch.py FINISH_ABORT.to_json:
     * {@code {"type":"abort","message","status_code","err_type"}}), and the HTTP layer turns it into
     * (sgl-project/sglang@001067fffe33427bee0ed2f007fb7551a1d76b44 tokenizer_manager.py
     * _handle_abort_finish_reason): a streamed /generate gets a last chunk carrying that finish reason,
     * then {@code [DONE]}; a whole answer gets the status with SGLang's error body (HTTPException for
     * 500/503, ValueError for 400); the OpenAI routes stream an error event
     * ({@code create_streaming_error_response}: {@code {"error":{"object":"error","message","type":
     * <HTTPStatus name>,"param":null,"code"}}}, serving_chat._generate_chat_stream) and {@code [DONE]}.
     */
    private void sglangAbort(int status, String type, String message) {
        for (SimItem item : items) {
            if (item.finishReason == null) {
                item.finishReason = "abort";
                item.abortMessage = message;
                item.abortStatus = status;
            }
        }
        if (headersSent) {
            if (request.route() == Route.GENERATE) {
                for (SimItem item : items) {
                    if (item.abortStatus != null) {
                        SseWriter.event(channel, format.finishEvent(this, item));
                    }
                }
            } else {
                SseWriter.event(channel, Responses.openAiStreamError(status, message));
            }
            finishStream();
        } else if (status == 400 && request.route() == Route.GENERATE) {
            Responses.json(channel, 400, Responses.generateError(message), keepAlive);
        } else {
            Responses.json(channel, status, Responses.error(status, type, message), keepAlive);
        }
    }

    /**
     * The connection closed. A kill or a dropped connection fails every live item at once; otherwise
     * the items are aborted when the server would notice ({@link SimConfig#abortOnDisconnect}): at
     * once, by SGLang's rule ({@link DisconnectWatch}), or never (they run on; their output goes nowhere).
     */
    void connectionClosed() {
        if (ended) {
            return;
        }
        AbortOnDisconnect rule = worker.isVllm() || dropped ? AbortOnDisconnect.IMMEDIATE
                : worker.config().abortOnDisconnect();
        switch (rule) {
            case IMMEDIATE -> abortForDepartedClient();
            case SGLANG -> disconnect.clientLeft();
            case NEVER -> { }
            default -> throw new IllegalStateException();
        }
    }

    /** The server aborts the request of a client that left: every live item ends, nothing more is written. */
    void abortForDepartedClient() {
        if (ended) {
            return;
        }
        ended = true;
        disconnect.cancel();
        SimWorker.Outcome outcome = dropped ? SimWorker.Outcome.FAILED : SimWorker.Outcome.ABORTED;
        for (SimItem item : items) {
            if (item.live()) {
                worker.endItem(item, outcome, "abort");
            }
        }
    }

    /** An item produced its {@code generated}-th token: an output for SGLang's disconnect checks. */
    void tokenProduced(int generated) {
        if (!ended) {
            disconnect.tokenProduced(generated);
        }
    }

    private void finishStream() {
        var f = SseWriter.done(channel);
        if (!keepAlive) {
            f.addListener(ChannelFutureListener.CLOSE);
        }
    }

    double secondsSinceReceived() {
        return (System.nanoTime() - receivedNanos) / 1e9;
    }

    int promptTokensForUsage() {
        if (request.route() == Route.CHAT) {
            return items.get(0).promptTokens; // n choices share one prompt
        }
        int sum = 0;
        for (SimItem i : items) {
            sum += i.promptTokens;
        }
        return sum;
    }

    int completionTokens() {
        int sum = 0;
        for (SimItem i : items) {
            sum += i.generated;
        }
        return sum;
    }
}
