package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.dataEvents;
import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.SimClient.nextRoom;
import static dev.sluice.testbed.sim.SimClient.pd;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The happy paths of the bootstrap handoff, driven by hand as a PD router would. */
class PdFlowTest {
    private static SimCluster cluster;
    private static PrefillServer prefill;
    private static DecodeServer decode;
    private final SimClient client = new SimClient();

    @BeforeAll
    static void start() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ofMillis(2)));
        prefill = cluster.prefills().get(0);
        decode = cluster.decodes().get(0);
    }

    @AfterEach
    void idle() throws Exception {
        assertThat(prefill.awaitIdle(Duration.ofSeconds(5))).isTrue();
        assertThat(decode.awaitIdle(Duration.ofSeconds(5))).isTrue();
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    private HttpResponse<String>[] both(String path, ObjectNode body) throws Exception {
        CompletableFuture<HttpResponse<String>> p = client.post(prefill, path, body);
        CompletableFuture<HttpResponse<String>> d = client.post(decode, path, body);
        @SuppressWarnings("unchecked")
        HttpResponse<String>[] out = new HttpResponse[] {p.get(), d.get()};
        return out;
    }

    @Test
    void generateNonStreamProducesTokensAndBothHalvesSawTheRequest() throws Exception {
        long room = nextRoom();
        ObjectNode body = pd("{\"text\":\"Once upon a time\",\"sampling_params\":{\"max_new_tokens\":5}}", prefill,
                "gen-1", room);
        HttpResponse<String>[] res = both("/generate", body);

        assertThat(res[0].statusCode()).as(res[0].body()).isEqualTo(200);
        assertThat(res[1].statusCode()).as(res[1].body()).isEqualTo(200);
        assertThat(res[1].headers().firstValue("content-type")).hasValue("application/json");
        JsonNode decoded = json(res[1].body());
        assertThat(decoded.get("text").asText()).isEqualTo(" t0 t1 t2 t3 t4");
        assertThat(decoded.at("/meta_info/id").asText()).isEqualTo("gen-1");
        assertThat(decoded.at("/meta_info/prompt_tokens").asInt()).isEqualTo(4);
        assertThat(decoded.at("/meta_info/completion_tokens").asInt()).isEqualTo(5);
        assertThat(decoded.at("/meta_info/finish_reason/type").asText()).isEqualTo("length");
        JsonNode prefilled = json(res[0].body());
        assertThat(prefilled.get("text").asText()).isEmpty();
        assertThat(prefilled.at("/meta_info/completion_tokens").asInt()).isZero();

        for (SimWorker w : List.of(prefill, decode)) {
            assertThat(w.journal()).anySatisfy(r -> {
                assertThat(r.method()).isEqualTo("POST");
                assertThat(r.path()).isEqualTo("/generate");
                assertThat(r.body().get("bootstrap_room").asLong()).isEqualTo(room);
                assertThat(r.body().get("rid").asText()).isEqualTo("gen-1");
            });
        }
        assertThat(prefill.stats().promptTokensProcessed()).isGreaterThanOrEqualTo(4);
    }

    @Test
    void generateStreamSendsCumulativeTextAndEndsWithDone() throws Exception {
        ObjectNode body = pd("{\"text\":\"hi\",\"stream\":true,\"return_logprob\":true,"
                + "\"sampling_params\":{\"max_new_tokens\":3}}", prefill, "gen-s", nextRoom());
        HttpResponse<String>[] res = both("/generate", body);

        assertThat(res[1].statusCode()).isEqualTo(200);
        assertThat(res[1].headers().firstValue("content-type").orElse("")).startsWith("text/event-stream");
        List<String> events = dataEvents(res[1].body());
        assertThat(events).hasSize(4).last().isEqualTo("[DONE]");
        assertThat(json(events.get(0)).get("text").asText()).isEqualTo(" t0");
        assertThat(json(events.get(0)).at("/meta_info/finish_reason").isNull()).isTrue();
        assertThat(json(events.get(2)).get("text").asText()).isEqualTo(" t0 t1 t2");
        assertThat(json(events.get(2)).at("/meta_info/finish_reason/length").asInt()).isEqualTo(3);
        assertThat(json(events.get(2)).at("/meta_info/output_token_logprobs").size()).isEqualTo(3);

        List<String> prefillEvents = dataEvents(res[0].body());
        assertThat(prefillEvents).hasSize(2).last().isEqualTo("[DONE]");
        JsonNode meta = json(prefillEvents.get(0)).get("meta_info");
        assertThat(meta.get("input_token_logprobs").size()).isEqualTo(meta.get("prompt_tokens").asInt());
        assertThat(meta.get("input_token_logprobs").get(0).get(1).isInt()).isTrue();
    }

    @Test
    void chatStreamHasRoleFirstFinishLastAndUsage() throws Exception {
        ObjectNode body = pd("{\"model\":\"sim-model\",\"stream\":true,\"max_tokens\":4,"
                + "\"stream_options\":{\"include_usage\":true},"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"Hello there\"}]}", prefill, "chat-s", nextRoom());
        HttpResponse<String>[] res = both("/v1/chat/completions", body);

        List<String> events = dataEvents(res[1].body());
        assertThat(events).hasSize(7).last().isEqualTo("[DONE]");
        JsonNode first = json(events.get(0));
        assertThat(first.get("object").asText()).isEqualTo("chat.completion.chunk");
        assertThat(first.get("id").asText()).isEqualTo("chat-s");
        assertThat(first.at("/choices/0/delta/role").asText()).isEqualTo("assistant");
        assertThat(first.at("/choices/0/delta/content").asText()).isEqualTo(" t0");
        JsonNode finish = json(events.get(4));
        assertThat(finish.at("/choices/0/finish_reason").asText()).isEqualTo("length");
        assertThat(finish.at("/choices/0/delta").isEmpty()).isTrue();
        JsonNode usage = json(events.get(5));
        assertThat(usage.get("choices").isEmpty()).isTrue();
        assertThat(usage.at("/usage/prompt_tokens").asInt()).isEqualTo(3 + 4); // 11 bytes -> 3, +4 per message
        assertThat(usage.at("/usage/completion_tokens").asInt()).isEqualTo(4);
        assertThat(usage.at("/usage/total_tokens").asInt()).isEqualTo(11);
    }

    @Test
    void chatAndCompletionsNonStream() throws Exception {
        HttpResponse<String>[] chat = both("/v1/chat/completions", pd("{\"model\":\"x\",\"max_completion_tokens\":2,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", prefill, "chat-1", nextRoom()));
        JsonNode c = json(chat[1].body());
        assertThat(c.get("object").asText()).isEqualTo("chat.completion");
        assertThat(c.at("/choices/0/message/content").asText()).isEqualTo(" t0 t1");
        assertThat(c.at("/choices/0/finish_reason").asText()).isEqualTo("length");
        assertThat(json(chat[0].body()).at("/choices/0/message/content").asText()).isEmpty();

        HttpResponse<String>[] comp = both("/v1/completions", pd("{\"model\":\"x\",\"max_tokens\":3,\"prompt\":\"abc\"}",
                prefill, "comp-1", nextRoom()));
        JsonNode t = json(comp[1].body());
        assertThat(t.get("object").asText()).isEqualTo("text_completion");
        assertThat(t.at("/choices/0/text").asText()).isEqualTo(" t0 t1 t2");
        assertThat(t.at("/usage/completion_tokens").asInt()).isEqualTo(3);
    }

    @Test
    void batchedGenerateIsOneItemPerRoom() throws Exception {
        ObjectNode body = json("{\"text\":[\"a\",\"bb\",\"ccc\"],\"sampling_params\":{\"max_new_tokens\":2}}");
        body.putArray("rid").add("b-0").add("b-1").add("b-2");
        body.putArray("bootstrap_host").add("127.0.0.1").add("127.0.0.1").add("127.0.0.1");
        body.putArray("bootstrap_port").add(prefill.bootstrapPort()).add(prefill.bootstrapPort())
                .add(prefill.bootstrapPort());
        body.putArray("bootstrap_room").add(nextRoom()).add(nextRoom()).add(nextRoom());
        long completedBefore = decode.stats().completed();

        HttpResponse<String>[] res = both("/generate", body);

        JsonNode list = json("{\"l\":" + res[1].body() + "}").get("l");
        assertThat(list.size()).isEqualTo(3);
        assertThat(list.get(2).at("/meta_info/id").asText()).isEqualTo("b-2");
        assertThat(list.get(1).get("text").asText()).isEqualTo(" t0 t1");
        assertThat(decode.stats().completed() - completedBefore).isEqualTo(3);
    }

    @Test
    void zeroDecodeStepStreamsManyTokens() throws Exception {
        try (SimCluster fast = SimCluster.start(1, 1, 0, SimConfig.defaults().withDecodeStep(Duration.ZERO))) {
            PrefillServer p = fast.prefills().get(0);
            ObjectNode body = pd("{\"prompt\":\"go\",\"stream\":true,\"max_tokens\":5000}", p, "many", nextRoom());
            CompletableFuture<HttpResponse<String>> pr = client.post(p, "/v1/completions", body);
            HttpResponse<String> d = client.postNow(fast.decodes().get(0), "/v1/completions", body);
            assertThat(pr.get().statusCode()).isEqualTo(200);
            List<String> events = dataEvents(d.body());
            assertThat(events).hasSize(5000 + 2).last().isEqualTo("[DONE]");
        }
    }
}
