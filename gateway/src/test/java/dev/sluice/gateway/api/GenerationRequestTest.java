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
    void recognisesBatchesTheWaySglangDoes() throws ApiException {
        assertThat(parse(GenerationRoute.GENERATE, "{\"text\":\"a\"}").batchSize()).isZero();
        assertThat(parse(GenerationRoute.GENERATE, "{\"text\":[\"a\",\"b\"]}").batchSize()).isEqualTo(2);
        assertThat(parse(GenerationRoute.GENERATE, "{\"input_ids\":[1,2,3]}").batchSize()).isZero();
        assertThat(parse(GenerationRoute.GENERATE, "{\"input_ids\":[[1],[2],[3]]}").batchSize()).isEqualTo(3);
        assertThat(parse(GenerationRoute.COMPLETIONS, "{\"prompt\":[\"a\",\"b\"]}").batchSize()).isEqualTo(2);
        assertThat(parse(GenerationRoute.COMPLETIONS, "{\"prompt\":[1,2]}").batchSize()).isZero();
        // a one-element list is a batch of one to SGLang (its string rid becomes rid_0): abortable only as such
        assertThat(parse(GenerationRoute.COMPLETIONS, "{\"prompt\":[\"a\"]}").batchSize()).isEqualTo(1);
        // parallel samples are not prompts: rooms and rids stay per prompt (SGLang multiplies them itself)
        GenerationRequest n4 = parse(GenerationRoute.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":4}");
        assertThat(n4.batchSize()).isZero();
        assertThat(n4.parallelSamples()).isEqualTo(4);
        assertThat(parse(GenerationRoute.GENERATE, "{\"text\":\"a\",\"sampling_params\":{\"n\":3}}")
                .parallelSamples()).isEqualTo(3);
        assertThat(parse(GenerationRoute.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":1}").parallelSamples()).isEqualTo(1);
    }

    @Test
    void acceptsWhatTheServersAccept() throws ApiException {
        // a 64-bit seed (vLLM: torch.long range; SGLang: sampling_seed), n with no upper cap
        assertThat(parse(GenerationRoute.CHAT_COMPLETIONS, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                + "\"seed\":9007199254740993,\"n\":500}").parallelSamples()).isEqualTo(500);
        // /generate's per-prompt lists (GenerateReqInput: sampling_params, return_logprob, logprob_start_len,
        // top_logprobs_num may each be a list)
        GenerationRequest g = parse(GenerationRoute.GENERATE, "{\"text\":[\"a\",\"b\"],\"sampling_params\":"
                + "[{\"max_new_tokens\":4},{\"max_new_tokens\":5,\"sampling_seed\":-9007199254740993}],"
                + "\"return_logprob\":[false,true],\"logprob_start_len\":[0,1],\"top_logprobs_num\":[1,2]}");
        assertThat(g.batchSize()).isEqualTo(2);
        assertThat(g.logprobs()).isTrue();
        assertThatThrownBy(() -> parse(GenerationRoute.GENERATE, "{\"text\":\"a\",\"sampling_params\":"
                + "[{\"max_new_tokens\":\"five\"}]}")).isInstanceOfSatisfying(ApiException.class,
                e -> assertThat(e.error().param()).isEqualTo("sampling_params[0].max_new_tokens"));
        assertThatThrownBy(() -> parse(GenerationRoute.CHAT_COMPLETIONS, "{\"messages\":[{\"role\":\"user\","
                + "\"content\":\"x\"}],\"seed\":1e30}")).isInstanceOf(ApiException.class);
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
