package dev.sluice.testbed.staticbackend;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.nio.charset.StandardCharsets;

/**
 * Every answer of the static backend, encoded once at startup (status line, headers, body) into a
 * pooled direct buffer. Serving one is a {@code retainedDuplicate()}: no encoding, no copy, no body
 * allocation per request. Each answer exists twice, for keep-alive and for {@code Connection: close}.
 */
final class StaticResponses implements AutoCloseable {
    /** The fixed chat completion (318 bytes): what a worker answers a short non-streamed chat request. */
    static final String CHAT_COMPLETION = "{\"id\":\"chatcmpl-static-0000000000000\",\"object\":\"chat.completion\","
            + "\"created\":1700000000,\"model\":\"static-model\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
            + "\"assistant\",\"content\":\"Hello! How can I help you today?\"},\"logprobs\":null,"
            + "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":48,\"completion_tokens\":12,"
            + "\"total_tokens\":60}}";

    /**
     * What a vLLM prefill in NIXL mode adds to its answer (docs/protocols.md): the handoff a decode leg
     * needs. The static decode never fetches anything, so the values only have to be well formed.
     */
    static final String KV_TRANSFER_PARAMS = "\"kv_transfer_params\":{\"do_remote_prefill\":true,"
            + "\"do_remote_decode\":false,\"remote_engine_id\":\"static-engine\",\"remote_block_ids\":[0,1,2,3],"
            + "\"remote_host\":\"127.0.0.1\",\"remote_port\":5600,\"remote_request_id\":\"static-0\",\"tp_size\":1}";

    private static final String METRICS = """
            # HELP sglang:num_running_reqs The number of running requests.
            # TYPE sglang:num_running_reqs gauge
            sglang:num_running_reqs{model_name="static-model"} 0.0
            # HELP sglang:num_queue_reqs The number of requests in the waiting queue.
            # TYPE sglang:num_queue_reqs gauge
            sglang:num_queue_reqs{model_name="static-model"} 0.0
            # HELP sglang:token_usage The token usage.
            # TYPE sglang:token_usage gauge
            sglang:token_usage{model_name="static-model"} 0.0
            """;

    private final Pair completion;
    private final Pair empty;
    private final Pair abort;
    private final Pair load;
    private final Pair metrics;
    private final Pair serverInfo;
    private final Pair modelInfo;
    private final Pair models;
    private final Pair notFound;
    private final Pair badRequest;

    StaticResponses(boolean kvTransferParams) {
        String body = kvTransferParams
                ? CHAT_COMPLETION.substring(0, CHAT_COMPLETION.length() - 1) + "," + KV_TRANSFER_PARAMS + "}"
                : CHAT_COMPLETION;
        completion = json(200, "OK", body);
        empty = new Pair(200, "OK", "text/plain", "");
        abort = json(200, "OK", "{}");
        load = json(200, "OK", "[{\"num_reqs\":0,\"num_waiting_reqs\":0,\"num_tokens\":0,\"dp_rank\":0}]");
        metrics = new Pair(200, "OK", "text/plain; version=0.0.4; charset=utf-8", METRICS);
        serverInfo = json(200, "OK", "{\"version\":\"static\",\"model_path\":\"static-model\","
                + "\"disaggregation_mode\":\"" + (kvTransferParams ? "prefill" : "null") + "\"}");
        modelInfo = json(200, "OK", "{\"model_path\":\"static-model\",\"is_generation\":true}");
        models = json(200, "OK", "{\"object\":\"list\",\"data\":[{\"id\":\"static-model\",\"object\":\"model\","
                + "\"created\":0,\"owned_by\":\"static\"}]}");
        notFound = json(404, "Not Found", "{\"object\":\"error\",\"message\":\"no such route\",\"code\":404}");
        badRequest = json(400, "Bad Request", "{\"object\":\"error\",\"message\":\"malformed request\",\"code\":400}");
    }

    /** The answer to a request line; {@code path} without the query. */
    ByteBuf forRequest(boolean post, String path, boolean keepAlive) {
        Pair p;
        if (post) {
            p = path.equals("/abort_request") ? abort : completion;
        } else {
            p = switch (path) {
                case "/health", "/health_generate" -> empty;
                case "/get_load" -> load;
                case "/metrics" -> metrics;
                case "/server_info", "/get_server_info" -> serverInfo;
                case "/get_model_info" -> modelInfo;
                case "/v1/models" -> models;
                default -> notFound;
            };
        }
        return p.get(keepAlive);
    }

    ByteBuf badRequest() {
        return badRequest.get(false);
    }

    /** The body of the POST answer, for the startup line and tests. */
    int completionBodyBytes() {
        return completion.bodyBytes;
    }

    @Override
    public void close() {
        for (Pair p : new Pair[] {completion, empty, abort, load, metrics, serverInfo, modelInfo, models, notFound,
                badRequest}) {
            p.keepAlive.release();
            p.close.release();
        }
    }

    private static Pair json(int status, String reason, String body) {
        return new Pair(status, reason, "application/json", body);
    }

    /** One answer, encoded for keep-alive and for close. */
    private static final class Pair {
        final ByteBuf keepAlive;
        final ByteBuf close;
        final int bodyBytes;

        Pair(int status, String reason, String contentType, String body) {
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            bodyBytes = b.length;
            keepAlive = encode(status, reason, contentType, b, false);
            close = encode(status, reason, contentType, b, true);
        }

        ByteBuf get(boolean keepAlive) {
            return (keepAlive ? this.keepAlive : close).retainedDuplicate();
        }

        private static ByteBuf encode(int status, String reason, String contentType, byte[] body, boolean close) {
            String head = "HTTP/1.1 " + status + " " + reason + "\r\ncontent-type: " + contentType
                    + "\r\ncontent-length: " + body.length + "\r\n" + (close ? "connection: close\r\n" : "") + "\r\n";
            byte[] h = head.getBytes(StandardCharsets.US_ASCII);
            ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(h.length + body.length);
            return buf.writeBytes(h).writeBytes(body);
        }
    }
}
