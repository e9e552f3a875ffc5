package dev.sluice.testbed.sim;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;

/** Whole (non-streamed) responses and the servers' error bodies. */
final class Responses {
    private Responses() {
    }

    static void json(Channel ch, int status, JsonNode body, boolean keepAlive) {
        byte[] bytes;
        try {
            bytes = SseWriter.JSON.writeValueAsBytes(body);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        send(ch, status, "application/json", Unpooled.wrappedBuffer(bytes), keepAlive);
    }

    static void text(Channel ch, int status, String contentType, String body, boolean keepAlive) {
        send(ch, status, contentType, Unpooled.copiedBuffer(body, StandardCharsets.UTF_8), keepAlive);
    }

    static void send(Channel ch, int status, String contentType, ByteBuf content, boolean keepAlive) {
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status),
                content);
        res.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
        if (contentType != null) {
            res.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        }
        if (!keepAlive) {
            res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        var f = ch.writeAndFlush(res);
        if (!keepAlive) {
            f.addListener(ChannelFutureListener.CLOSE);
        }
    }

    /** SGLang's error body: {@code {"object":"error","message","type","code"}}. */
    static ObjectNode error(int status, String type, String message) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("object", "error");
        o.put("message", message);
        o.put("type", type);
        o.put("param", (String) null);
        o.put("code", status);
        return o;
    }

    /** vLLM's error body (its {@code ErrorResponse}): {@code {"error":{"message","type","param","code"}}}. */
    static ObjectNode vllmError(int status, String type, String message) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        ObjectNode e = o.putObject("error");
        e.put("message", message);
        e.put("type", type);
        e.putNull("param");
        e.put("code", status);
        return o;
    }

    /**
     * SGLang's native {@code /generate} error ({@code _create_error_response} for a ValueError, 400):
     * {@code {"error":{"message"}}}; also the body of a streamed ValueError event, which has no code
     * (sgl-project/sglang@0025436eab0556737d615b36a4dd3e1e26e82f3d
     * python/sglang/srt/entrypoints/http_server.py generate_request / stream_results).
     */
    static ObjectNode generateError(String message) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.putObject("error").put("message", message);
        return o;
    }

    /**
     * SGLang's OpenAI streaming error ({@code OpenAIServingBase.create_streaming_error_response}):
     * {@code {"error":{"object":"error","message","type":<HTTPStatus name>,"param":null,"code"}}}.
     */
    static ObjectNode openAiStreamError(int status, String message) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        ObjectNode e = o.putObject("error");
        e.put("object", "error");
        e.put("message", message);
        e.put("type", HttpResponseStatus.valueOf(status).reasonPhrase().toUpperCase(java.util.Locale.ROOT)
                .replace(' ', '_'));
        e.putNull("param");
        e.put("code", status);
        return o;
    }

    /** The mid-stream form: {@code {"error":{"message","type","code"}}}. */
    static ObjectNode streamError(int status, String type, String message) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        ObjectNode e = o.putObject("error");
        e.put("message", message);
        e.put("type", type);
        e.put("code", status);
        return o;
    }

    static String errorType(int status) {
        return switch (status) {
            case 400 -> "BadRequestError";
            case 404 -> "NotFoundError";
            case 429 -> "TooManyRequestsError";
            case 500 -> "InternalServerError";
            case 502 -> "BadGatewayError";
            case 503 -> "ServiceUnavailableError";
            case 504 -> "GatewayTimeoutError";
            default -> HttpResponseStatus.valueOf(status).reasonPhrase().replace(" ", "") + "Error";
        };
    }
}
