package dev.sluice.gateway.api;

import dev.sluice.gateway.testing.Requests;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class GenerationRequestTest {
    private static GenerationRequest parse(GenerationRoute route, String json) throws ApiException {
        return Requests.parse(route, json);
    }

    @Test
    void recognisesBatchesTheWaySglangRoutersDo() throws ApiException {
        assertThat(parse(GenerationRoute.GENERATE, "{\"text\":\"a\"}").batchSize()).isZero();
        assertThat(parse(GenerationRoute.GENERATE, "{\"text\":[\"a\",\"b\"]}").batchSize()).isEqualTo(2);
        assertThat(parse(GenerationRoute.GENERATE, "{\"input_ids\":[1,2,3]}").batchSize()).isZero();
        assertThat(parse(GenerationRoute.GENERATE, "{\"input_ids\":[[1],[2],[3]]}").batchSize()).isEqualTo(3);
        assertThat(parse(GenerationRoute.COMPLETIONS, "{\"prompt\":[\"a\",\"b\"]}").batchSize()).isEqualTo(2);
        assertThat(parse(GenerationRoute.COMPLETIONS, "{\"prompt\":[1,2]}").batchSize()).isZero();
        assertThat(parse(GenerationRoute.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":4}").batchSize()).isEqualTo(4);
        assertThat(parse(GenerationRoute.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":1}").batchSize()).isZero();
    }

    @Test
    void readsStreamAndLogprobFlags() throws ApiException {
        GenerationRequest g = parse(GenerationRoute.GENERATE, "{\"text\":\"a\",\"stream\":true,\"return_logprob\":true}");
        assertThat(g.stream()).isTrue();
        assertThat(g.logprobs()).isTrue();
        GenerationRequest c = parse(GenerationRoute.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":false}");
        assertThat(c.stream()).isFalse();
        assertThat(c.logprobs()).isFalse();
        assertThat(parse(GenerationRoute.COMPLETIONS, "{\"prompt\":\"a\",\"logprobs\":2}").logprobs()).isTrue();
    }

    @Test
    void rejectsWhatNoWorkerCouldServe() {
        assertThatThrownBy(() -> parse(GenerationRoute.GENERATE, "{}"))
                .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.error().code()).isEqualTo("missing_prompt"));
        assertThatThrownBy(() -> parse(GenerationRoute.CHAT_COMPLETIONS, "{\"messages\":[\"hi\"]}"))
                .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.error().code()).isEqualTo("invalid_field"));
        assertThatThrownBy(() -> parse(GenerationRoute.COMPLETIONS, "null"))
                .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.error().status().code()).isEqualTo(400));
    }
}
