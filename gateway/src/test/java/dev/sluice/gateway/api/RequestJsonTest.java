package dev.sluice.gateway.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.gateway.config.JsonLimits;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class RequestJsonTest {
    private static final String MSG = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    private static final RequestJson SMALL = new RequestJson(new JsonLimits(8, 1024, 20, 32));

    private static ApiError error(RequestJson json, GenerationRoute route, byte[] body) {
        ByteBuf buf = Unpooled.wrappedBuffer(body);
        try {
            json.parse(route, buf);
            throw new AssertionError("accepted: " + new String(body, StandardCharsets.UTF_8));
        } catch (ApiException e) {
            return e.error();
        } finally {
            buf.release();
        }
    }

    private static ApiError error(GenerationRoute route, String body) {
        return error(SMALL, route, body.getBytes(StandardCharsets.UTF_8));
    }

    @ParameterizedTest(name = "{0}: {1} -> {3}")
    @CsvSource(delimiter = '|', value = {
            "CHAT_COMPLETIONS|\"max_tokens\":\"ten\"|max_tokens|invalid_type",
            "CHAT_COMPLETIONS|\"stream\":\"yes\"|stream|invalid_type",
            "CHAT_COMPLETIONS|\"stream\":1|stream|invalid_type",
            "CHAT_COMPLETIONS|\"temperature\":\"hot\"|temperature|invalid_type",
            "CHAT_COMPLETIONS|\"stop\":[1,2]|stop|invalid_type",
            "CHAT_COMPLETIONS|\"logprobs\":3|logprobs|invalid_type",
            "CHAT_COMPLETIONS|\"max_tokens\":1.5|max_tokens|invalid_type",
            "CHAT_COMPLETIONS|\"max_tokens\":99999999999|max_tokens|invalid_value",
            "CHAT_COMPLETIONS|\"max_tokens\":-1|max_tokens|invalid_value",
            "CHAT_COMPLETIONS|\"stream_options\":true|stream_options|invalid_type",
            "CHAT_COMPLETIONS|\"tools\":{}|tools|invalid_type",
            "COMPLETIONS|\"logprobs\":true|logprobs|invalid_type",
            "COMPLETIONS|\"echo\":\"no\"|echo|invalid_type",
    })
    void aWrongTypeNamesTheField(GenerationRoute route, String field, String param, String code) {
        String prompt = route == GenerationRoute.COMPLETIONS ? "\"prompt\":\"hi\"" : MSG;
        ApiError e = error(route, "{" + prompt + "," + field + "}");
        assertThat(e.status().code()).isEqualTo(400);
        assertThat(e.code()).isEqualTo(code);
        assertThat(e.param()).isEqualTo(param);
        assertThat(e.message()).contains("'" + param + "'");
        assertThat(e.toJson().at("/error/param").asText()).isEqualTo(param);
    }

    @Test
    void nestedSamplingParamsAreCheckedWithADottedName() {
        ApiError e = error(GenerationRoute.GENERATE, "{\"text\":\"a\",\"sampling_params\":{\"max_new_tokens\":\"5\"}}");
        assertThat(e.param()).isEqualTo("sampling_params.max_new_tokens");
        assertThat(error(GenerationRoute.GENERATE, "{\"text\":\"a\",\"sampling_params\":[]}").param())
                .isEqualTo("sampling_params");
    }

    @Test
    void nullMeansTheDefaultAndUnknownFieldsPass() throws ApiException {
        ByteBuf buf = Unpooled.copiedBuffer("{" + MSG + ",\"max_tokens\":null,\"stream\":null,\"x_vendor\":{\"a\":[1]}}",
                StandardCharsets.UTF_8);
        try {
            GenerationRequest r = SMALL.parse(GenerationRoute.CHAT_COMPLETIONS, buf);
            assertThat(r.stream()).isFalse();
            assertThat(r.body().get("x_vendor").toString()).isEqualTo("{\"a\":[1]}");
        } finally {
            buf.release();
        }
    }

    @Test
    void duplicateKeysAreRefusedAtAnyDepth() {
        ApiError top = error(GenerationRoute.CHAT_COMPLETIONS, "{" + MSG + ",\"rid\":\"a\",\"rid\":\"b\"}");
        assertThat(top.code()).isEqualTo("invalid_json");
        assertThat(top.message()).contains("Duplicate field 'rid'");
        // the same key written once plainly and once escaped is still the same key
        ApiError escaped = error(GenerationRoute.CHAT_COMPLETIONS, "{" + MSG + ",\"stream\":false,\"\\u0073tream\":true}");
        assertThat(escaped.message()).contains("Duplicate field 'stream'");
        ApiError nested = error(GenerationRoute.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"role\":\"system\",\"content\":\"x\"}]}");
        assertThat(nested.message()).contains("Duplicate field 'role'");
    }

    @Test
    void invalidUtf8IsRefused() {
        byte[] head = ("{\"messages\":[{\"role\":\"user\",\"content\":\"").getBytes(StandardCharsets.US_ASCII);
        byte[] tail = "\"}]}".getBytes(StandardCharsets.US_ASCII);
        for (byte[] bad : new byte[][]{{(byte) 0xff}, {(byte) 0xc3}, {(byte) 0xed, (byte) 0xa0, (byte) 0x80},
                {(byte) 0xc0, (byte) 0xaf}}) {
            byte[] body = new byte[head.length + bad.length + tail.length];
            System.arraycopy(head, 0, body, 0, head.length);
            System.arraycopy(bad, 0, body, head.length, bad.length);
            System.arraycopy(tail, 0, body, head.length + bad.length, tail.length);
            ApiError e = error(SMALL, GenerationRoute.CHAT_COMPLETIONS, body);
            assertThat(e.code()).as("bytes %s", java.util.Arrays.toString(bad)).isEqualTo("invalid_json");
            assertThat(e.message()).containsIgnoringCase("UTF-8");
        }
    }

    @Test
    void limitsNameTheirConfigKey() {
        String deep = "[".repeat(9) + "]".repeat(9);
        assertThat(error(GenerationRoute.CHAT_COMPLETIONS, "{" + MSG + ",\"x\":" + deep + "}").message())
                .contains("http.json.max_depth 8");
        assertThat(error(GenerationRoute.CHAT_COMPLETIONS, "{" + MSG + ",\"seed\":" + "1".repeat(21) + "}").message())
                .contains("http.json.max_number_length 20");
        assertThat(error(GenerationRoute.CHAT_COMPLETIONS, "{" + MSG + ",\"" + "k".repeat(33) + "\":1}").message())
                .contains("http.json.max_name_length 32");
        ApiError longString = error(GenerationRoute.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"" + "x".repeat(1025) + "\"}]}");
        assertThat(longString.code()).isEqualTo("json_limit");
        assertThat(longString.message()).contains("http.json.max_string_length 1024");
    }

    @Test
    void theDefaultsAcceptARealisticRequest() throws ApiException {
        String tools = "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":" + "{\"type\":\"object\",\"properties\":{\"a\":".repeat(10)
                + "{\"type\":\"string\"}" + "}}".repeat(10) + "}}";
        String body = "{" + MSG + ",\"tools\":[" + tools + "],\"max_tokens\":16,\"temperature\":0.7,\"stop\":[\"\\n\"]}";
        ByteBuf buf = Unpooled.copiedBuffer(body, StandardCharsets.UTF_8);
        try {
            assertThat(RequestJson.DEFAULT.parse(GenerationRoute.CHAT_COMPLETIONS, buf).body().get("max_tokens").asInt())
                    .isEqualTo(16);
        } finally {
            buf.release();
        }
    }

    @Test
    void trailingContentIsRefused() {
        ByteBuf buf = Unpooled.copiedBuffer("{" + MSG + "} {}", StandardCharsets.UTF_8);
        try {
            assertThatThrownBy(() -> GenerationRequest.parse(GenerationRoute.CHAT_COMPLETIONS, buf))
                    .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.error().code()).isEqualTo("invalid_json"));
        } finally {
            buf.release();
        }
    }
}
