package dev.sluice.gateway.api;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.config.JsonLimits;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import java.io.IOException;
import java.util.Objects;

/**
 * Reads a client's JSON body under limits, strictly: the bytes a worker gets (spliced from the
 * client's own, see pd.WorkerBodies) must mean exactly what the gateway checked, so nothing a
 * parser could read two ways passes.
 * <ul>
 *   <li>duplicate keys are refused ({@code {"rid":"a","rid":"b"}}: which one would a worker take?);
 *   <li>trailing content after the object is refused;
 *   <li>invalid UTF-8 is refused (Jackson's UTF-8 decoder checks every byte sequence);
 *   <li>depth, string, number and key length are bounded while parsing ({@link JsonLimits}), so a
 *       hostile document costs no more than its bytes.
 * </ul>
 */
public final class RequestJson {
    public static final RequestJson DEFAULT = new RequestJson(JsonLimits.DEFAULTS);

    private final ObjectMapper json;
    private final JsonLimits limits;

    public RequestJson(JsonLimits limits) {
        this.limits = Objects.requireNonNull(limits, "limits");
        JsonFactory factory = JsonFactory.builder()
                .streamReadConstraints(StreamReadConstraints.builder()
                        .maxNestingDepth(limits.maxDepth())
                        .maxStringLength(limits.maxStringLength())
                        .maxNumberLength(limits.maxNumberLength())
                        .maxNameLength(limits.maxNameLength())
                        .build())
                .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .build();
        this.json = JsonMapper.builder(factory).enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS).build();
    }

    public JsonLimits limits() {
        return limits;
    }

    /** The client's body as a validated request for {@code route}, or the 400 that says what is wrong. */
    public GenerationRequest parse(GenerationRoute route, ByteBuf content) throws ApiException {
        Objects.requireNonNull(route, "route");
        if (!content.isReadable()) {
            throw new ApiException(ApiError.invalidRequest("invalid_json", "request body is empty (expected: a JSON object)"));
        }
        byte[] raw = ByteBufUtil.getBytes(content);
        JsonNode tree;
        try {
            tree = json.readTree(raw);
        } catch (StreamConstraintsException e) {
            throw new ApiException(ApiError.invalidRequest("json_limit", "request body exceeds a JSON limit: "
                    + limitMessage(e.getOriginalMessage())));
        } catch (JsonProcessingException e) {
            throw new ApiException(ApiError.invalidRequest("invalid_json", "request body is not valid JSON: "
                    + e.getOriginalMessage()));
        } catch (IOException e) {
            throw new ApiException(ApiError.invalidRequest("invalid_json", "request body cannot be read: " + e.getMessage()));
        }
        if (tree == null || !tree.isObject()) {
            throw new ApiException(ApiError.invalidRequest("invalid_json", "request body must be a JSON object, got "
                    + (tree == null ? "nothing" : tree.getNodeType().name().toLowerCase(java.util.Locale.ROOT))));
        }
        return GenerationRequest.of(route, (ObjectNode) tree, raw);
    }

    /** Jackson names its own getter; the operator needs the config key. */
    private String limitMessage(String jackson) {
        String key = jackson.contains("getMaxNestingDepth") ? "http.json.max_depth " + limits.maxDepth()
                : jackson.contains("getMaxStringLength") ? "http.json.max_string_length " + limits.maxStringLength()
                : jackson.contains("getMaxNumberLength") ? "http.json.max_number_length " + limits.maxNumberLength()
                : jackson.contains("getMaxNameLength") ? "http.json.max_name_length " + limits.maxNameLength()
                : null;
        String what = jackson.replaceAll(" *\\(from `StreamReadConstraints[^)]*\\)", "");
        return key == null ? jackson : what + " (limit: " + key + ")";
    }
}
