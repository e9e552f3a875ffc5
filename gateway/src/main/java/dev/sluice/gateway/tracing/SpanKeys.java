package dev.sluice.gateway.tracing;

import io.opentelemetry.api.common.AttributeKey;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The attribute keys of the gateway's spans and events, made once. A span attribute set by name
 * ({@code setAttribute("sluice.worker", ...)}) builds a new key object on every call; at a few
 * thousand requests a second, each with up to five spans, those keys were a measurable part of
 * what tracing costs the event loop (docs/benchmarks.md, "Tracing").
 */
final class SpanKeys {
    // OpenTelemetry's semantic conventions (GenAI, HTTP, server, error)
    static final AttributeKey<String> GEN_AI_OPERATION = AttributeKey.stringKey("gen_ai.operation.name");
    static final AttributeKey<String> GEN_AI_MODEL = AttributeKey.stringKey("gen_ai.request.model");
    static final AttributeKey<Long> GEN_AI_MAX_TOKENS = AttributeKey.longKey("gen_ai.request.max_tokens");
    static final AttributeKey<Long> GEN_AI_INPUT_TOKENS = AttributeKey.longKey("gen_ai.usage.input_tokens");
    static final AttributeKey<Long> GEN_AI_OUTPUT_TOKENS = AttributeKey.longKey("gen_ai.usage.output_tokens");
    static final AttributeKey<List<String>> GEN_AI_FINISH_REASONS =
            AttributeKey.stringArrayKey("gen_ai.response.finish_reasons");
    static final AttributeKey<String> HTTP_METHOD = AttributeKey.stringKey("http.request.method");
    static final AttributeKey<String> URL_PATH = AttributeKey.stringKey("url.path");
    static final AttributeKey<String> HTTP_ROUTE = AttributeKey.stringKey("http.route");
    static final AttributeKey<Long> HTTP_STATUS = AttributeKey.longKey("http.response.status_code");
    static final AttributeKey<List<String>> HTTP_RETRY_AFTER = AttributeKey.stringArrayKey("http.response.header.retry-after");
    static final AttributeKey<String> SERVER_ADDRESS = AttributeKey.stringKey("server.address");
    static final AttributeKey<Long> SERVER_PORT = AttributeKey.longKey("server.port");
    static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");

    // the gateway's own
    static final AttributeKey<String> REQUEST_ID = AttributeKey.stringKey("sluice.request_id");
    static final AttributeKey<Boolean> STREAM = AttributeKey.booleanKey("sluice.stream");
    static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("sluice.outcome");
    static final AttributeKey<Long> ATTEMPTS = AttributeKey.longKey("sluice.attempts");
    static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("sluice.attempt");
    static final AttributeKey<String> ERROR_MESSAGE = AttributeKey.stringKey("sluice.error.message");
    static final AttributeKey<String> PRIORITY = AttributeKey.stringKey("sluice.priority");
    static final AttributeKey<String> TENANT = AttributeKey.stringKey("sluice.tenant");
    static final AttributeKey<Long> PROMPT_TOKENS = AttributeKey.longKey("sluice.prompt_tokens");
    static final AttributeKey<String> DECISION = AttributeKey.stringKey("sluice.admission.decision");
    static final AttributeKey<Boolean> QUEUED = AttributeKey.booleanKey("sluice.admission.queued");
    static final AttributeKey<Long> WAIT_MS = AttributeKey.longKey("sluice.admission.wait_ms");
    static final AttributeKey<String> REASON = AttributeKey.stringKey("sluice.admission.reason");
    static final AttributeKey<Long> RETRY_AFTER_S = AttributeKey.longKey("sluice.admission.retry_after_s");
    static final AttributeKey<String> PREFILL = AttributeKey.stringKey("sluice.prefill");
    static final AttributeKey<String> DECODE = AttributeKey.stringKey("sluice.decode");
    static final AttributeKey<String> WORKER = AttributeKey.stringKey("sluice.worker");
    static final AttributeKey<String> WORKER_RID = AttributeKey.stringKey("sluice.worker_rid");
    static final AttributeKey<Double> TTFT_S = AttributeKey.doubleKey("sluice.ttft_s");
    static final AttributeKey<String> FAILURE = AttributeKey.stringKey("sluice.failure");
    static final AttributeKey<String> BLAMED_WORKER = AttributeKey.stringKey("sluice.blamed_worker");
    static final AttributeKey<String> RETRY_REASON = AttributeKey.stringKey("sluice.retry.reason");
    static final AttributeKey<Long> RETRY_BACKOFF_MS = AttributeKey.longKey("sluice.retry.backoff_ms");
    static final AttributeKey<String> ABORT_CAUSE = AttributeKey.stringKey("sluice.abort.cause");

    private SpanKeys() {
    }

    // a call attribute's key by its name (the protocols' few constants), made once rather than a call
    private static final Map<String, AttributeKey<Long>> LONG_KEYS = new ConcurrentHashMap<>();
    private static final Map<String, AttributeKey<String>> STRING_KEYS = new ConcurrentHashMap<>();

    /** The key of a number attribute named at run time, made once a name. */
    static AttributeKey<Long> longKey(String name) {
        return LONG_KEYS.computeIfAbsent(name, AttributeKey::longKey);
    }

    /** The key of a text attribute named at run time, made once a name. */
    static AttributeKey<String> stringKey(String name) {
        return STRING_KEYS.computeIfAbsent(name, AttributeKey::stringKey);
    }
}
