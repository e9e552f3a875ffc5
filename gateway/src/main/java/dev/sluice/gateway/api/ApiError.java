package dev.sluice.gateway.api;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Every failure the gateway reports: its HTTP status, an OpenAI-style error body
 * ({@code {"error": {"message", "type", "code"}}}) and the {@code outcome} label of its metrics.
 * One type, so a status never loses its meaning on the way to the client.
 */
public record ApiError(HttpResponseStatus status, String type, String code, String message, Outcome outcome,
                       long retryAfterSeconds, String param) {

    public ApiError {
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(code, "code");
        Objects.requireNonNull(message, "message");
        Objects.requireNonNull(outcome, "outcome");
    }

    public ApiError(HttpResponseStatus status, String type, String code, String message, Outcome outcome) {
        this(status, type, code, message, outcome, 0, null);
    }

    public ApiError(HttpResponseStatus status, String type, String code, String message, Outcome outcome,
                    long retryAfterSeconds) {
        this(status, type, code, message, outcome, retryAfterSeconds, null);
    }

    /** A 400 about one field of the body: OpenAI's {@code param} names it (dotted for nested fields). */
    public static ApiError invalidField(String code, String param, String message) {
        return new ApiError(HttpResponseStatus.BAD_REQUEST, "invalid_request_error", code, message, Outcome.BAD_REQUEST,
                0, param);
    }

    /** Admission said no: 429/503/413 with a distinct code and an honest Retry-After. */
    public static ApiError rejected(HttpResponseStatus status, String code, String message, long retryAfterSeconds) {
        String type = status.code() == 429 ? "rate_limit_error"
                : status.code() == 413 ? "invalid_request_error" : "server_error";
        return new ApiError(status, type, code, message, Outcome.REJECTED, retryAfterSeconds);
    }

    public static ApiError invalidRequest(String code, String message) {
        return new ApiError(HttpResponseStatus.BAD_REQUEST, "invalid_request_error", code, message, Outcome.BAD_REQUEST);
    }

    public static ApiError notFound(String path) {
        return new ApiError(HttpResponseStatus.NOT_FOUND, "invalid_request_error", "not_found",
                "no route for " + path, Outcome.BAD_REQUEST);
    }

    /**
     * A model no pool serves: 404 with OpenAI's body for it ({@code code: model_not_found}, {@code param: model}),
     * what the OpenAI SDKs raise as {@code NotFoundError}.
     */
    public static ApiError modelNotFound(String model, String served) {
        return new ApiError(HttpResponseStatus.NOT_FOUND, "invalid_request_error", "model_not_found", "The model `"
                + model + "` does not exist or you do not have access to it (served here: " + served + ").",
                Outcome.BAD_REQUEST, 0, "model");
    }

    public static ApiError methodNotAllowed(String method, String path, String allowed) {
        return new ApiError(HttpResponseStatus.METHOD_NOT_ALLOWED, "invalid_request_error", "method_not_allowed",
                method + " is not allowed on " + path + " (allowed: " + allowed + ")", Outcome.BAD_REQUEST);
    }

    public static ApiError bodyTooLarge(long limit) {
        return new ApiError(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "invalid_request_error", "body_too_large",
                "request body exceeds " + limit + " bytes (http.max_request_body)", Outcome.BAD_REQUEST);
    }

    /** The HTTP layer refused a request before it was one (limits, framing, time): the connection closes. */
    public static ApiError httpRefused(HttpResponseStatus status, String code, String message) {
        return new ApiError(status, status.code() == 503 ? "server_error" : "invalid_request_error", code, message,
                status.code() == 503 ? Outcome.REJECTED : Outcome.BAD_REQUEST);
    }

    /** No valid API key: OpenAI's 401 {@code invalid_api_key} (the key itself is never echoed). */
    public static ApiError unauthorized(String message) {
        return new ApiError(HttpResponseStatus.UNAUTHORIZED, "invalid_request_error", "invalid_api_key", message,
                Outcome.BAD_REQUEST);
    }

    public static ApiError noCapacity(String message) {
        return new ApiError(HttpResponseStatus.SERVICE_UNAVAILABLE, "server_error", "no_capacity", message,
                Outcome.REJECTED);
    }

    public static ApiError unreachable(String role, String worker, String cause) {
        return new ApiError(HttpResponseStatus.BAD_GATEWAY, "server_error", "upstream_unreachable",
                role + " worker " + worker + " is unreachable: " + cause, Outcome.UPSTREAM_ERROR);
    }

    public static ApiError malformed(String role, String worker, String cause) {
        return new ApiError(HttpResponseStatus.BAD_GATEWAY, "server_error", "upstream_malformed_response",
                role + " worker " + worker + " sent a malformed response: " + cause, Outcome.UPSTREAM_ERROR);
    }

    public static ApiError timeout(String what) {
        return new ApiError(HttpResponseStatus.GATEWAY_TIMEOUT, "server_error", "upstream_timeout", what,
                Outcome.TIMEOUT);
    }

    /** A worker answered with an error status: keep the status (a 429 stays a 429), explain who said it. */
    public static ApiError fromWorker(int status, String role, String worker, String workerMessage) {
        HttpResponseStatus s = HttpResponseStatus.valueOf(status);
        String type = status == 429 ? "rate_limit_error" : status < 500 ? "invalid_request_error" : "server_error";
        String code = status == 429 ? "worker_overloaded" : "worker_error";
        // the worker refused the client's request (a prompt over the context length, a bad parameter): the
        // client's error, not the worker's (an auth or routing 4xx is the gateway's, and stays an upstream error)
        Outcome outcome = status == 400 || status == 422 ? Outcome.BAD_REQUEST : Outcome.UPSTREAM_ERROR;
        return new ApiError(s, type, code, role + " worker " + worker + " answered " + status
                + (workerMessage.isEmpty() ? "" : ": " + workerMessage), outcome);
    }

    public static ApiError internal(String message) {
        return new ApiError(HttpResponseStatus.INTERNAL_SERVER_ERROR, "server_error", "internal_error", message,
                Outcome.INTERNAL_ERROR);
    }

    private static final byte[] MESSAGE = ascii("{\"error\":{\"message\":\"");
    private static final byte[] TYPE = ascii("\",\"type\":\"");
    private static final byte[] CODE = ascii("\",\"code\":\"");
    private static final byte[] PARAM = ascii("\",\"param\":\"");
    private static final byte[] STATUS = ascii("\",\"status\":");
    private static final byte[] END = ascii("}}");

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The body of {@link #toJson()}, byte for byte, written straight into a buffer: no tree, no
     * generator (the 429 of an overload is the path that runs most, and cheapest matters there).
     * Every string is escaped by Jackson's own encoder.
     */
    public ByteBuf toJsonBytes(ByteBufAllocator alloc) {
        JsonStringEncoder enc = JsonStringEncoder.getInstance();
        byte[] m = enc.quoteAsUTF8(message);
        byte[] p = param == null ? null : enc.quoteAsUTF8(param);
        ByteBuf b = alloc.buffer(96 + m.length + type.length() + code.length() + (p == null ? 0 : p.length));
        b.writeBytes(MESSAGE).writeBytes(m).writeBytes(TYPE).writeBytes(enc.quoteAsUTF8(type))
                .writeBytes(CODE).writeBytes(enc.quoteAsUTF8(code));
        if (p != null) {
            b.writeBytes(PARAM).writeBytes(p);
        }
        b.writeBytes(STATUS);
        ByteBufUtil.writeAscii(b, Integer.toString(status.code()));
        return b.writeBytes(END);
    }

    /** The {@code {"error": {...}}} body; in a stream the same object is the last {@code data:} event. */
    public ObjectNode toJson() {
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        ObjectNode error = root.putObject("error");
        error.put("message", message);
        error.put("type", type);
        error.put("code", code);
        if (param != null) {
            error.put("param", param);
        }
        error.put("status", status.code());
        return root;
    }
}
