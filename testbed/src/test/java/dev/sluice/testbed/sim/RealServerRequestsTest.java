package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.dataEvents;
import static dev.sluice.testbed.sim.SimClient.eventually;
import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.SimClient.nextRoom;
import static dev.sluice.testbed.sim.SimClient.onLoop;
import static dev.sluice.testbed.sim.SimClient.pd;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Request handling as the real SGLang server does it: ValueErrors without a code, the context length,
 * rid normalisation and n > 1, aborts by exact rid behind --admin-api-key, --max-queued-requests, and
 * the field types it accepts.
 */
class RealServerRequestsTest {
    private SimCluster cluster;
    private final SimClient client = new SimClient();

    @AfterEach
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private UnifiedServer unified(SimConfig cfg) throws Exception {
        cluster = SimCluster.start(0, 1, 0, cfg, SimMode.UNIFIED);
        return cluster.unified().get(0);
    }

    @Test
    void contextLengthAndBadSamplingAreCodelessValueErrorsOnGenerate() throws Exception {
        UnifiedServer u = unified(SimConfig.defaults().withContextLength(100));
        String longText = "z".repeat(400); // 100 tokens at 4 bytes a token
        HttpResponse<String> whole = client.postNow(u, "/generate", json("{\"text\":\"" + longText + "\"}"));
        assertThat(whole.statusCode()).isEqualTo(400);
        assertThat(json(whole.body()).at("/error/message").asText())
                .isEqualTo("The input (100 tokens) is longer than the model's context length (100 tokens).");
        assertThat(json(whole.body()).get("error").has("code")).isFalse();

        HttpResponse<String> streamed = client.postNow(u, "/generate", json("{\"text\":\"" + longText
                + "\",\"stream\":true}"));
        assertThat(streamed.statusCode()).isEqualTo(200);
        List<String> events = dataEvents(streamed.body());
        assertThat(events).hasSize(2).last().isEqualTo("[DONE]");
        JsonNode error = json(events.get(0)).get("error");
        assertThat(error.get("message").asText()).startsWith("The input (100 tokens)");
        assertThat(error.size()).as("message only, no code").isEqualTo(1);

        HttpResponse<String> total = client.postNow(u, "/generate", json("{\"text\":\"" + "z".repeat(200)
                + "\",\"sampling_params\":{\"max_new_tokens\":60}}"));
        assertThat(json(total.body()).at("/error/message").asText()).startsWith(
                "Requested token count exceeds the model's maximum context length of 100 tokens. You requested a "
                        + "total of 110 tokens: 50 tokens from the input messages and 60 tokens for the completion.");

        HttpResponse<String> temp = client.postNow(u, "/generate", json("{\"text\":\"a\",\"sampling_params\":"
                + "{\"temperature\":-1}}"));
        assertThat(temp.statusCode()).isEqualTo(400);
        assertThat(json(temp.body()).at("/error/message").asText()).isEqualTo("temperature must be non-negative, got -1.0.");

        HttpResponse<String> chat = client.postNow(u, "/v1/chat/completions", json("{\"messages\":[{\"role\":"
                + "\"user\",\"content\":\"" + longText + "\"}]}"));
        assertThat(chat.statusCode()).isEqualTo(400);
        JsonNode openAi = json(chat.body());
        assertThat(openAi.get("object").asText()).isEqualTo("error");
        assertThat(openAi.get("code").asInt()).isEqualTo(400);
        assertThat(openAi.get("message").asText()).contains("is longer than the model's context length (100 tokens)");
        assertThat(u.stats().completed() + u.stats().failed()).isZero();
    }

    @Test
    void ridsAreNormalisedLikeGenerateReqInput() throws Exception {
        UnifiedServer u = unified(SimConfig.defaults().withDefaultMaxTokens(2));
        JsonNode batch = json("{\"l\":" + client.postNow(u, "/generate", json("{\"text\":[\"a\",\"b\",\"c\"],"
                + "\"rid\":\"r\"}")).body() + "}").get("l");
        assertThat(batch).extracting(n -> n.at("/meta_info/id").asText()).containsExactly("r_0", "r_1", "r_2");

        HttpResponse<String> mismatch = client.postNow(u, "/generate", json("{\"text\":[\"a\",\"b\"],"
                + "\"rid\":[\"x\"]}"));
        assertThat(mismatch.statusCode()).isEqualTo(400);
        assertThat(json(mismatch.body()).at("/error/message").asText())
                .isEqualTo("The specified rids length mismatch with the batch_size for batch processing.");
        JsonNode listed = json("{\"l\":" + client.postNow(u, "/generate", json("{\"text\":[\"a\",\"b\"],"
                + "\"rid\":[\"x\",\"y\"]}")).body() + "}").get("l");
        assertThat(listed).extracting(n -> n.at("/meta_info/id").asText()).containsExactly("x", "y");

        // n > 1: a single prompt becomes a batch, every sample runs under a fresh uuid4 hex rid
        JsonNode samples = json("{\"l\":" + client.postNow(u, "/generate", json("{\"text\":\"a\",\"rid\":\"s\","
                + "\"sampling_params\":{\"n\":3}}")).body() + "}").get("l");
        assertThat(samples).hasSize(3);
        assertThat(samples).extracting(n -> n.at("/meta_info/id").asText()).allMatch(id -> id.matches("[0-9a-f]{32}"))
                .doesNotHaveDuplicates();
        HttpResponse<String> listN = client.postNow(u, "/generate", json("{\"text\":[\"a\",\"b\"],"
                + "\"rid\":[\"x\",\"y\",\"z\",\"w\"],\"sampling_params\":{\"n\":2}}"));
        assertThat(listN.statusCode()).as("a list rid has one entry per prompt, not per sample").isEqualTo(400);
    }

    @Test
    void nSamplesOfAPromptShareItsRoomInPd() throws Exception {
        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDefaultMaxTokens(2));
        PrefillServer p = cluster.prefills().get(0);
        DecodeServer d = cluster.decodes().get(0);
        long room = nextRoom();
        ObjectNode body = pd("{\"text\":[\"a\",\"b\"],\"sampling_params\":{\"n\":2}}", p, "pn", room);
        CompletableFuture<HttpResponse<String>> pf = client.post(p, "/generate", body);
        HttpResponse<String> dr = client.postNow(d, "/generate", body);
        assertThat(dr.statusCode()).isEqualTo(200);
        assertThat(pf.get(5, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(json("{\"l\":" + dr.body() + "}").get("l")).hasSize(4);
        assertThat(p.stats().completed()).isEqualTo(4);
        assertThat(d.stats().completed()).isEqualTo(4);
        assertThat(d.stats().kvTransferFailures()).isZero();
    }

    @Test
    void abortMatchesOnlyAnExactExpandedRidAndNeedsTheAdminKey() throws Exception {
        UnifiedServer u = unified(SimConfig.defaults().withAdminApiKey("k3y").withPrefillTokensPerSecond(50));
        String prompt = "w".repeat(4000);
        CompletableFuture<HttpResponse<String>> res = client.post(u, "/generate", json("{\"text\":[\"" + prompt
                + "\",\"" + prompt + "\"],\"rid\":\"base\"}"));
        assertThat(eventually(Duration.ofSeconds(5), () -> u.stats().running() + u.stats().queued() == 2)).isTrue();

        HttpResponse<String> noKey = client.postNow(u, "/abort_request", json("{\"rid\":\"base_0\"}"));
        assertThat(noKey.statusCode()).isEqualTo(401);
        assertThat(json(noKey.body()).get("error").asText()).isEqualTo("Unauthorized");
        String auth = "Bearer k3y";
        for (String rid : new String[] {"base", "base_", "bas"}) {
            assertThat(client.post(u, "/abort_request", json("{\"rid\":\"" + rid + "\"}"), "Authorization", auth)
                    .get().statusCode()).isEqualTo(200);
        }
        assertThat(u.aborts()).extracting(AbortRecord::matched).containsExactly(false, false, false);
        assertThat(u.stats().aborted()).isZero();
        client.post(u, "/abort_request", json("{\"rid\":\"base_1\"}"), "Authorization", auth).get();
        assertThat(eventually(Duration.ofSeconds(5), () -> u.stats().aborted() == 1)).isTrue();
        client.post(u, "/abort_request", json("{\"abort_all\":true}"), "Authorization", auth).get();
        assertThat(eventually(Duration.ofSeconds(5), () -> u.stats().aborted() == 2)).isTrue();
        assertThat(res.get(5, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }

    @Test
    void aFullWaitingQueueRefusesWith503OnAUnifiedServerOnly() throws Exception {
        UnifiedServer u = unified(SimConfig.defaults().withMaxQueuedRequests(1).withPrefillTokensPerSecond(50));
        String prompt = "v".repeat(4000);
        client.post(u, "/generate", json("{\"text\":\"" + prompt + "\"}")); // prefilling
        assertThat(eventually(Duration.ofSeconds(5), () -> u.stats().running() == 1)).isTrue();
        client.post(u, "/generate", json("{\"text\":\"" + prompt + "\"}")); // waiting: the queue is full
        assertThat(eventually(Duration.ofSeconds(5), () -> u.stats().queued() == 1)).isTrue();

        HttpResponse<String> refused = client.postNow(u, "/generate", json("{\"text\":\"a\"}"));
        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(json(refused.body()).get("message").asText()).isEqualTo("The request queue is full.");
        HttpResponse<String> streamed = client.postNow(u, "/generate", json("{\"text\":\"a\",\"stream\":true}"));
        assertThat(streamed.statusCode()).isEqualTo(200);
        JsonNode abort = json(dataEvents(streamed.body()).get(0)).at("/meta_info/finish_reason");
        assertThat(abort.get("type").asText()).isEqualTo("abort");
        assertThat(abort.get("status_code").asInt()).isEqualTo(503);
        assertThat(abort.get("message").asText()).isEqualTo("The request queue is full.");
        client.postNow(u, "/abort_request", json("{\"abort_all\":true}"));
        cluster.close();

        cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withMaxQueuedRequests(1)
                .withPrefillTokensPerSecond(50));
        PrefillServer p = cluster.prefills().get(0);
        for (int i = 0; i < 3; i++) {
            client.post(p, "/generate", pd("{\"text\":\"" + prompt + "\"}", p, "pd" + i, nextRoom()));
        }
        assertThat(eventually(Duration.ofSeconds(5), () -> p.stats().queued() == 2)).as("PD ignores the limit")
                .isTrue();
        client.postNow(p, "/abort_request", json("{\"abort_all\":true}"));
    }

    @Test
    void fieldTypesTheRealServerAccepts() throws Exception {
        UnifiedServer u = unified(SimConfig.defaults().withDefaultMaxTokens(2));
        HttpResponse<String> seed = client.postNow(u, "/v1/completions", json("{\"prompt\":\"a\",\"max_tokens\":2,"
                + "\"seed\":9223372036854775807}"));
        assertThat(seed.statusCode()).isEqualTo(200);
        HttpResponse<String> lists = client.postNow(u, "/generate", json("{\"text\":[\"a\",\"b\"],"
                + "\"sampling_params\":[{\"max_new_tokens\":1},{\"max_new_tokens\":3}],\"return_logprob\":[false,false],"
                + "\"logprob_start_len\":[-1,-1],\"top_logprobs_num\":[0,0]}"));
        assertThat(lists.statusCode()).isEqualTo(200);
        JsonNode out = json("{\"l\":" + lists.body() + "}").get("l");
        assertThat(out.get(0).at("/meta_info/completion_tokens").asInt()).isEqualTo(1);
        assertThat(out.get(1).at("/meta_info/completion_tokens").asInt()).isEqualTo(3);
        HttpResponse<String> manyN = client.postNow(u, "/v1/chat/completions", json("{\"messages\":[{\"role\":"
                + "\"user\",\"content\":\"a\"}],\"n\":300,\"max_tokens\":1}"));
        assertThat(manyN.statusCode()).as("no n cap").isEqualTo(200);
        assertThat(json(manyN.body()).get("choices")).hasSize(300);
        HttpResponse<String> listWithN = client.postNow(u, "/generate", json("{\"text\":[\"a\"],"
                + "\"return_logprob\":[true],\"sampling_params\":{\"n\":2}}"));
        assertThat(json(listWithN.body()).at("/error/message").asText())
                .isEqualTo("Cannot use list return_logprob with parallel_sample_num > 1");
        assertThat(onLoop(u, () -> u.live.size())).isZero();
    }
}
