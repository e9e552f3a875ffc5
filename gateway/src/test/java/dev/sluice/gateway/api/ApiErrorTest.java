package dev.sluice.gateway.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The error body written as bytes is the tree's JSON, byte for byte, whatever the strings hold. */
class ApiErrorTest {
    @Test
    void bytesAreTheTreeSerialisedForEveryKindOfString() throws Exception {
        List<ApiError> errors = List.of(
                ApiError.rejected(HttpResponseStatus.TOO_MANY_REQUESTS, "queue_full", "queue full (32/32)", 3),
                ApiError.invalidField("invalid_type", "sampling_params.max_new_tokens",
                        "Invalid type for 'max_new_tokens': \"5\" \\ é 漢 \u0001 \n\t 😀"),
                ApiError.invalidField("json_limit", "k\"e\\y\u007f\u2028", "x"),
                ApiError.notFound("/v1/../admin?x=\"<script>\""),
                ApiError.fromWorker(503, "decode", "d0", "{\"error\":\"busy\"}"),
                ApiError.internal(""));
        ObjectMapper json = new ObjectMapper();
        for (ApiError e : errors) {
            ByteBuf b = e.toJsonBytes(UnpooledByteBufAllocator.DEFAULT);
            try {
                String written = b.toString(StandardCharsets.UTF_8);
                assertThat(written).isEqualTo(e.toJson().toString());
                assertThat(json.readTree(written).path("error").path("message").asText()).isEqualTo(e.message());
                assertThat(json.readTree(written).path("error").path("status").asInt()).isEqualTo(e.status().code());
            } finally {
                b.release();
            }
        }
    }
}
