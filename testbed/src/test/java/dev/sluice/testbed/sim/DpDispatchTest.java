package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.json;
import static dev.sluice.testbed.sim.SimClient.pd;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** A DP=4 server gives each request the rank it names, else its own choice, as SGLang's DP controller does. */
class DpDispatchTest {
    private final SimClient client = new SimClient();

    @Test
    void unifiedServerHonoursTheNamedRankAndTakesTurnsOtherwise() throws Exception {
        try (SimCluster cluster = SimCluster.start(0, 1, 0, SimConfig.defaults().withDpSize(4), SimMode.UNIFIED)) {
            UnifiedServer u = cluster.unified().get(0);
            for (int rank : new int[] {3, 3, 1}) {
                HttpResponse<String> r = client.postNow(u, "/generate", json("{\"text\":\"hi\",\"rid\":\"r" + rank
                        + "\",\"routed_dp_rank\":" + rank + ",\"sampling_params\":{\"max_new_tokens\":1}}"));
                assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            }
            client.postNow(u, "/generate", json("{\"text\":\"hi\",\"rid\":\"old\",\"data_parallel_rank\":2,"
                    + "\"sampling_params\":{\"max_new_tokens\":1}}"));
            for (int i = 0; i < 2; i++) {
                client.postNow(u, "/generate", json("{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":1}}"));
            }
            List<RankAssignment> ranks = u.rankAssignments();
            assertThat(ranks).extracting(RankAssignment::rank).containsExactly(3, 3, 1, 2, 0, 1);
            assertThat(ranks).extracting(RankAssignment::how).containsExactly(RankAssignment.How.ROUTED,
                    RankAssignment.How.ROUTED, RankAssignment.How.ROUTED, RankAssignment.How.ROUTED,
                    RankAssignment.How.ROUND_ROBIN, RankAssignment.How.ROUND_ROBIN);

            // out of range: ignored, the server's own turn (newer SGLang; older ones crashed their controller)
            HttpResponse<String> outside = client.postNow(u, "/v1/completions",
                    json("{\"model\":\"m\",\"prompt\":\"hi\",\"max_tokens\":1,\"routed_dp_rank\":4}"));
            assertThat(outside.statusCode()).isEqualTo(200);
            assertThat(u.rankAssignments()).last().satisfies(a -> {
                assertThat(a.rank()).isEqualTo(2);
                assertThat(a.how()).isEqualTo(RankAssignment.How.ROUND_ROBIN);
            });
            HttpResponse<String> bad = client.postNow(u, "/v1/completions",
                    json("{\"model\":\"m\",\"prompt\":\"hi\",\"routed_dp_rank\":\"two\"}"));
            assertThat(bad.statusCode()).isEqualTo(400);
        }
    }

    @Test
    void pdPrefillFollowsTheRoomAndTheDecodeFetchesFromTheRankItExpects() throws Exception {
        try (SimCluster cluster = SimCluster.start(1, 1, 0, SimConfig.defaults().withDpSize(4), SimMode.SGLANG)) {
            PrefillServer p = cluster.prefills().get(0);
            DecodeServer d = cluster.decodes().get(0);
            String text = "{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":2}}";

            // the room alone: the prefill computes it on room % 4, and the decode looks there
            HttpResponse<String>[] ok = both(p, d, pd(text, p, "a", 4000L * 4 + 2), pd(text, p, "a", 4000L * 4 + 2));
            assertThat(ok[1].statusCode()).as(ok[1].body()).isEqualTo(200);
            assertThat(p.rankAssignments()).singleElement().satisfies(a -> {
                assertThat(a.rank()).isEqualTo(2);
                assertThat(a.how()).isEqualTo(RankAssignment.How.BOOTSTRAP_ROOM);
            });

            // a named prefill rank that is not where the room was computed: the transfer fails
            ObjectNode prefillBody = pd(text, p, "b", 4001L * 4 + 1);
            ObjectNode decodeBody = pd(text, p, "b", 4001L * 4 + 1);
            decodeBody.put("disagg_prefill_dp_rank", 3);
            HttpResponse<String>[] wrong = both(p, d, prefillBody, decodeBody);
            assertThat(wrong[1].body()).contains("expected it on prefill dp rank 3, it was computed on rank 1");

            // the gateway's way: the prefill told its rank, the room matching it, the decode told both
            prefillBody = pd(text, p, "c", 4002L * 4 + 3);
            prefillBody.put("routed_dp_rank", 3);
            decodeBody = pd(text, p, "c", 4002L * 4 + 3);
            decodeBody.put("routed_dp_rank", 0).put("disagg_prefill_dp_rank", 3);
            HttpResponse<String>[] routed = both(p, d, prefillBody, decodeBody);
            assertThat(routed[1].statusCode()).as(routed[1].body()).isEqualTo(200);
            assertThat(json(routed[1].body()).at("/meta_info/completion_tokens").asInt()).isEqualTo(2);
            assertThat(d.rankAssignments()).last().satisfies(a -> {
                assertThat(a.rank()).isZero();
                assertThat(a.how()).isEqualTo(RankAssignment.How.ROUTED);
            });
            assertThat(p.rankAssignments()).last().extracting(RankAssignment::rank).isEqualTo(3);
        }
    }

    private HttpResponse<String>[] both(PrefillServer p, DecodeServer d, ObjectNode prefillBody, ObjectNode decodeBody)
            throws Exception {
        CompletableFuture<HttpResponse<String>> pr = client.post(p, "/generate", prefillBody);
        CompletableFuture<HttpResponse<String>> dr = client.post(d, "/generate", decodeBody);
        @SuppressWarnings("unchecked")
        HttpResponse<String>[] out = new HttpResponse[] {pr.get(), dr.get()};
        return out;
    }

    @Test
    void eachRankHasItsOwnPrefixCache() throws Exception {
        SimConfig twoRanks = SimConfig.defaults().withDpSize(2).withPrefixCacheTokens(8192);
        try (SimCluster cluster = SimCluster.start(0, 1, 0, twoRanks, SimMode.UNIFIED)) {
            UnifiedServer u = cluster.unified().get(0);
            String prompt = "p".repeat(4 * 640); // 640 tokens: 40 blocks
            for (int rank : new int[] {0, 1, 0}) {
                HttpResponse<String> r = client.postNow(u, "/generate", json("{\"text\":\"" + prompt
                        + "\",\"routed_dp_rank\":" + rank + ",\"sampling_params\":{\"max_new_tokens\":1}}"));
                assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            }
            // the first on each rank computes it all; the second on rank 0 finds all but its last token
            assertThat(u.stats().prefixCacheQueryTokens()).isEqualTo(3 * 640);
            assertThat(u.stats().prefixCacheHitTokens()).isEqualTo(639);
        }
    }
}
