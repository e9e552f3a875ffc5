package dev.sluice.gateway.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.config.ClassPolicy;
import dev.sluice.gateway.config.ClassPolicy.OnExcess;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** A class's completion-token ceiling and default applied to a client's body, and the bytes a worker gets. */
class CompletionTokenLimitsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ClassPolicy CLAMP = new ClassPolicy(false, 100, OnExcess.CLAMP, 10);
    private static final ClassPolicy REFUSE = new ClassPolicy(false, 100, OnExcess.REFUSE, 0);

    private static GenerationRequest parse(GenerationRoute route, String body) throws ApiException {
        return GenerationRequest.parse(route, Unpooled.wrappedBuffer(body.getBytes(StandardCharsets.UTF_8)));
    }

    private static String raw(GenerationRequest r) throws Exception {
        return JSON.readTree(r.raw()).toString();
    }

    @Test
    void withinTheCeilingTheRequestIsUntouched() throws Exception {
        GenerationRequest r = parse(GenerationRoute.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":100}");
        assertThat(CompletionTokenLimits.apply(r, CLAMP, "normal")).isSameAs(r);
        assertThat(CompletionTokenLimits.apply(r, ClassPolicy.NONE, "normal")).isSameAs(r);
    }

    @Test
    void clampLowersEveryFieldInTheBytesAWorkerGets() throws Exception {
        GenerationRequest r = CompletionTokenLimits.apply(parse(GenerationRoute.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":101,"
                        + "\"max_completion_tokens\":2147483647}"), CLAMP, "normal");
        assertThat(r.maxTokens()).isEqualTo(100);
        assertThat(raw(r)).contains("\"max_tokens\":100").contains("\"max_completion_tokens\":100");
        assertThat(r.clean()).isTrue();
    }

    @Test
    void refuseNamesTheFieldAndTheCeiling() throws Exception {
        GenerationRequest r = parse(GenerationRoute.GENERATE,
                "{\"text\":[\"a\",\"b\"],\"sampling_params\":[{\"max_new_tokens\":5},{\"max_new_tokens\":500}]}");
        ApiException e = catchThrowableOfType(ApiException.class, () -> CompletionTokenLimits.apply(r, REFUSE, "low"));
        assertThat(e.error().status().code()).isEqualTo(400);
        assertThat(e.error().code()).isEqualTo("max_tokens_too_large");
        assertThat(e.error().message()).contains("sampling_params[1].max_new_tokens").contains("500")
                .contains("at most 100").contains("'low'");
    }

    @Test
    void aRequestNamingNoLimitGetsTheDefaultWhereItsServerReadsIt() throws Exception {
        GenerationRequest chat = CompletionTokenLimits.apply(parse(GenerationRoute.COMPLETIONS,
                "{\"prompt\":\"hi\",\"max_tokens\":null}"), CLAMP, "normal");
        assertThat(raw(chat)).contains("\"max_tokens\":10");
        GenerationRequest gen = CompletionTokenLimits.apply(parse(GenerationRoute.GENERATE, "{\"text\":\"hi\"}"),
                CLAMP, "normal");
        assertThat(raw(gen)).isEqualTo("{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":10}}");
        GenerationRequest list = CompletionTokenLimits.apply(parse(GenerationRoute.GENERATE,
                "{\"text\":[\"a\",\"b\"],\"sampling_params\":[{\"temperature\":0},{\"max_new_tokens\":3}]}"),
                CLAMP, "normal");
        assertThat(raw(list)).contains("[{\"temperature\":0,\"max_new_tokens\":10},{\"max_new_tokens\":3}]");
        assertThat(list.maxTokens()).isEqualTo(10);
    }
    @Test
    void onCompletionsMaxCompletionTokensIsNotALimitTheWorkerReads() throws Exception {
        // /v1/completions reads max_tokens only (SGLang's CompletionRequest has no max_completion_tokens):
        // a max_completion_tokens there neither counts as the request's limit nor is refused over the ceiling
        GenerationRequest r = CompletionTokenLimits.apply(parse(GenerationRoute.COMPLETIONS,
                "{\"prompt\":\"hi\",\"max_completion_tokens\":5000}"), REFUSE, "normal");
        assertThat(raw(r)).contains("\"max_completion_tokens\":5000").doesNotContain("\"max_tokens\"");
        GenerationRequest d = CompletionTokenLimits.apply(parse(GenerationRoute.COMPLETIONS,
                "{\"prompt\":\"hi\",\"max_completion_tokens\":1}"), CLAMP, "normal");
        assertThat(raw(d)).contains("\"max_tokens\":10");
        assertThat(d.maxTokens()).isEqualTo(10);
    }
}
