package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.netty.channel.Channel;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The requests that start or stop work on a server: a generation request is validated and its
 * items admitted to the role's queues (or, under {@code stallAll}, parked), an abort request ends
 * the matching items. Confined to the server's event loop.
 */
final class RequestIntake {
    private static final Logger log = LoggerFactory.getLogger(RequestIntake.class);

    private RequestIntake() {
    }

    /**
     * {@code requestIdHeader}: the request's {@code X-Request-Id}, null when it had none; {@code dpRankHeader}: a
     * vLLM server's {@code X-data-parallel-rank}, null when it had none (SGLang takes its rank from the body).
     */
    static void generation(SimWorker w, SimHttpHandler handler, Channel ch, Route route, JsonNode body,
                           String requestIdHeader, String dpRankHeader, boolean keepAlive, long now) {
        int failStatus = w.faults.failStatus();
        if (failStatus > 0) {
            Responses.json(ch, failStatus, w.errorBody(failStatus, Responses.errorType(failStatus),
                    "simulated failure"), keepAlive);
            return;
        }
        GenerationRequest request;
        DpDispatch.Requested ranks;
        try {
            // vLLM takes a rank only from its X-data-parallel-rank header, never from the body
            ranks = w.isVllm() ? DpDispatch.vllmHeader(dpRankHeader, w.cfg.dpSize())
                    : DpDispatch.read(body, w.cfg.dpSize());
            request = GenerationRequest.parse(route, body, w.cfg.defaultMaxTokens(),
                    w.requestId(route, requestIdHeader), w.cfg.contextLength());
            w.validate(request);
        } catch (GenerationRequest.BadRequest e) {
            log.info("{} {} rejected path={}: {}", w.role(), w.ordinal, route.path, e.getMessage());
            refuse(w, ch, route, body, e.getMessage(), keepAlive);
            return;
        }
        Exchange ex = new Exchange(w, ch, request, keepAlive, now);
        DpDispatch.assign(w, ranks, ex.items);
        handler.current = ex;
        w.live.addAll(ex.items);
        ex.begin();
        if (w.faults.stallAll()) {
            stall(w, ex);
        } else {
            w.admit(ex);
        }
        w.publishGauges();
    }

    /**
     * A refused body. SGLang's {@code /generate} raises a ValueError: a stream answers 200 with
     * {@code data: {"error": {"message": ...}}} (no code) and {@code data: [DONE]}, a whole answer 400
     * with {@code {"error": {"message": ...}}} (sgl-project/sglang@0025436eab0556737d615b36a4dd3e1e26e82f3d
     * python/sglang/srt/entrypoints/http_server.py generate_request). The OpenAI routes and vLLM answer
     * 400 with their OpenAI error body.
     */
    private static void refuse(SimWorker w, Channel ch, Route route, JsonNode body, String message,
                               boolean keepAlive) {
        if (route != Route.GENERATE || w.isVllm()) {
            Responses.json(ch, 400, w.errorBody(400, "BadRequestError", message), keepAlive);
            return;
        }
        boolean stream = body != null && body.path("stream").asBoolean(false);
        if (!stream) {
            Responses.json(ch, 400, Responses.generateError(message), keepAlive);
            return;
        }
        SseWriter.headers(ch);
        SseWriter.event(ch, Responses.generateError(message));
        var done = SseWriter.done(ch);
        if (!keepAlive) {
            done.addListener(io.netty.channel.ChannelFutureListener.CLOSE);
        }
    }

    /** A hung scheduler: the items wait, without work, for an abort or for their client to leave. */
    private static void stall(SimWorker w, Exchange ex) {
        for (SimItem item : ex.items) {
            item.state = SimItem.State.STALLED;
            w.stalledItems++;
            w.stalled(item);
        }
        log.info("{} {} stalled rid={} items={}", w.role(), w.ordinal, ex.request.rid(), ex.items.size());
    }

    static void abortRequest(SimWorker w, Channel ch, JsonNode body, boolean keepAlive, long now) {
        boolean all = body != null && body.path("abort_all").asBoolean(false);
        String rid = all ? "*" : body == null ? "" : body.path("rid").asText("");
        List<SimItem> matched = new ArrayList<>();
        // tokenizer_manager.abort_request forwards only an exact rid the HTTP layer holds in rid_to_state
        // (the rids as GenerateReqInput._normalize_rid expanded them), or abort_all
        // (sgl-project/sglang@001067fffe33427bee0ed2f007fb7551a1d76b44 tokenizer_manager.py abort_request)
        for (SimItem item : w.live) {
            if (all || (!rid.isEmpty() && item.rid.equals(rid))) {
                matched.add(item);
            }
        }
        for (SimItem item : matched) {
            if (item.live()) {
                w.endItem(item, SimWorker.Outcome.ABORTED, "abort");
                item.exchange.itemEnded(item);
            }
        }
        log.info("{} {} abort rid={} matched={}", w.role(), w.ordinal, rid, matched.size());
        w.journal.record(new AbortRecord(rid, now, !matched.isEmpty()));
        Responses.json(ch, 200, JsonNodeFactory.instance.objectNode(), keepAlive);
    }
}
