package dev.sluice.testbed.sim;

import static dev.sluice.testbed.sim.SimClient.eventually;
import static dev.sluice.testbed.sim.SimClient.json;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A DP decode runs each rank up to its share of {@code --max-running-requests}, as SGLang's schedulers
 * do with DP attention; the rest wait with their KV in, in the rank's waiting queue ({@code num_queue_reqs}),
 * and start the moment a slot of their own rank frees, not one of another rank.
 */
class DecodeRankCapTest {
    private final SimClient client = new SimClient();

    @Test
    void eachRankRunsItsShareAndQueuesTheRestWithTheirKvIn() throws Exception {
        // 4 running a server over 2 ranks: 2 a rank; 20 ms a step, 40 tokens: 0.8 s a stream
        SimConfig cfg = SimConfig.defaults().withDpSize(2).withDecodeMaxBatch(4).withDecodeStep(Duration.ofMillis(20));
        try (SimCluster cluster = SimCluster.start(0, 1, 0, cfg, SimMode.SGLANG)) {
            DecodeServer d = cluster.decodes().get(0);
            List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                answers.add(client.post(d, "/generate", decode("r0-" + i, 0, 40)));
            }
            assertThat(eventually(Duration.ofSeconds(5), () -> gauges(d, "num_running_reqs", 0) == 2
                    && gauges(d, "num_queue_reqs", 0) == 1)).as(metrics(d)).isTrue();
            // the server's batch has room for 2 more, but rank 0 none: the third waits while rank 1 is idle
            assertThat(gauges(d, "num_running_reqs", 1)).isZero();
            assertThat(gauges(d, "num_decode_transfer_queue_reqs", 0)).isZero();

            // rank 1's own cap is free: its request runs at once, ahead of rank 0's waiting one
            answers.add(client.post(d, "/generate", decode("r1-0", 1, 40)));
            assertThat(eventually(Duration.ofSeconds(5), () -> gauges(d, "num_running_reqs", 1) == 1))
                    .as(metrics(d)).isTrue();
            assertThat(gauges(d, "num_queue_reqs", 0)).as("rank 0 still full").isEqualTo(1);

            // a slot of rank 0 frees when one of its streams ends: the waiting one starts, nothing waits
            assertThat(eventually(Duration.ofSeconds(10), () -> gauges(d, "num_queue_reqs", 0) == 0
                    && gauges(d, "num_running_reqs", 0) >= 1)).as(metrics(d)).isTrue();
            for (CompletableFuture<HttpResponse<String>> a : answers) {
                HttpResponse<String> r = a.get();
                assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                assertThat(json(r.body()).at("/meta_info/completion_tokens").asInt()).isEqualTo(40);
            }

            // what SGLang reports of the cap: its arguments' total, and each rank's share
            var info = json(client.get(d, "/server_info").body());
            assertThat(info.path("max_running_requests").asInt()).isEqualTo(4);
            assertThat(info.path("internal_states")).hasSize(2).allSatisfy(
                    s -> assertThat(s.path("effective_max_running_requests_per_dp").asInt()).isEqualTo(2));
        }
    }

    @Test
    void oneRankServerKeepsOneCapForTheServer() throws Exception {
        SimConfig cfg = SimConfig.defaults().withDecodeMaxBatch(2).withDecodeStep(Duration.ofMillis(20));
        try (SimCluster cluster = SimCluster.start(0, 1, 0, cfg, SimMode.SGLANG)) {
            DecodeServer d = cluster.decodes().get(0);
            List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                answers.add(client.post(d, "/generate", decode("one-" + i, -1, 40)));
            }
            assertThat(eventually(Duration.ofSeconds(5), () -> gauges(d, "num_running_reqs", 0) == 2
                    && gauges(d, "num_queue_reqs", 0) == 1)).as(metrics(d)).isTrue();
            for (CompletableFuture<HttpResponse<String>> a : answers) {
                assertThat(a.get().statusCode()).isEqualTo(200);
            }
        }
    }

    /** A decode request whose KV comes from SGLang's fake bootstrap host (at once, no prefill). */
    private static com.fasterxml.jackson.databind.node.ObjectNode decode(String rid, int rank, int tokens) {
        var o = json("{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":" + tokens + ",\"ignore_eos\":true}}");
        o.put("rid", rid);
        o.put("bootstrap_host", BootstrapServer.FAKE_BOOTSTRAP_HOST);
        o.put("bootstrap_port", 8998);
        o.put("bootstrap_room", SimClient.nextRoom());
        if (rank >= 0) {
            o.put("routed_dp_rank", rank);
        }
        return o;
    }

    private String metrics(DecodeServer d) {
        try {
            return client.get(d, "/metrics").body();
        } catch (Exception e) {
            return e.toString();
        }
    }

    /** One rank's value of an SGLang gauge on {@code /metrics}, -1 when absent. */
    private int gauges(DecodeServer d, String name, int rank) {
        Matcher m = Pattern.compile("^sglang:" + name + "\\{[^}]*dp_rank=\"" + rank + "\"[^}]*\\} (\\S+)$",
                Pattern.MULTILINE).matcher(metrics(d));
        return m.find() ? (int) Double.parseDouble(m.group(1)) : -1;
    }
}
