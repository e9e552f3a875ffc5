package dev.sluice.testbed.load;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.testbed.sim.PrefillServer;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The incident in miniature, straight to the workers as SGLang's router: one prefill at 1,000
 * tokens/s, a burst of five ~1,000-token prompts (seed 12: all within 3% of 1,000), clients
 * that wait 2.5 s. Two get their first
 * token (at ~1 s and ~2 s); the third's prefill started in time but ends after its client left;
 * the fourth and fifth start after theirs left. The three abandoned prefills fail their KV
 * transfers once computed, because the router dropped their decode halves.
 */
class LoadEndToEndTest {
    @Test
    void directModeReproducesTheCascadeAndReadsTheWorkers() throws Exception {
        SimConfig cfg = SimConfig.defaults().withPrefillTokensPerSecond(1_000).withDecodeStep(Duration.ofMillis(2));
        try (SimCluster cluster = SimCluster.start(1, 1, 0, cfg)) {
            PrefillServer p = cluster.prefills().get(0);
            URI prefill = URI.create(p.url());
            URI decode = URI.create(cluster.decodes().get(0).url());
            LoadSpec spec = new LoadSpec(LoadSpec.Target.DIRECT, null, List.of(prefill), List.of(p.bootstrapPort()),
                    List.of(decode), 5, null, LoadSpec.Arrival.BURST, 5, 0, 12, 1_000, 8, Duration.ofMillis(2_500),
                    Duration.ofMillis(2_500), null, null, 0, "sim-model", List.of(), Duration.ofSeconds(30), "mini");
            ByteArrayOutputStream progress = new ByteArrayOutputStream();

            ObjectNode r = new LoadRun(spec, new PrintStream(progress, true)).run();

            String text = TextReport.render(r);
            assertThat(r.at("/counts/sent").asInt()).as(text).isEqualTo(5);
            assertThat(r.at("/counts/completed").asInt()).as(text).isEqualTo(2);
            assertThat(r.at("/counts/gave_up_before_first_token").asInt()).as(text).isEqualTo(3);
            assertThat(r.at("/counts/failed").asInt() + r.at("/counts/rejected").asInt()).as(text).isZero();
            assertThat(r.at("/goodput/good_requests").asInt()).as(text).isEqualTo(2);
            assertThat(r.at("/throughput/output_tokens").asInt()).as(text).isEqualTo(16);
            assertThat(r.at("/latency_ms/ttft/p50").asDouble()).as(text).isBetween(900.0, 2_500.0);
            assertThat(r.at("/latency_ms/tpot/count").asInt()).isEqualTo(2);
            assertThat(r.at("/workers/settled").asBoolean()).as(text).isTrue();
            assertThat(r.at("/workers/per_worker")).hasSize(2);
            assertThat(r.at("/workers/per_worker/0/role").asText()).isEqualTo("prefill");
            assertThat(r.at("/workers/per_worker/0/kv_transfer_failures").asInt()).as(text).isEqualTo(3);
            assertThat(r.at("/workers/per_worker/1/aborted_requests").asInt()).as(text).isEqualTo(3);
            assertThat(r.at("/workers/kv_transfer_failures").asInt()).as(text).isEqualTo(3);
            assertThat(r.at("/workers/work_for_departed_clients").asInt()).as(text).isEqualTo(2);
            assertThat(r.at("/workers/departed_client_work_seconds").asDouble()).as(text).isBetween(2.0, 3.5);
            assertThat(r.at("/router/prefill_answers/ok").asInt()).isEqualTo(2);
            assertThat(r.at("/router/prefill_answers/kv_transfer_error").asInt()).isEqualTo(3);
            assertThat(r.at("/config/arrival").asText()).isEqualTo("burst");
            assertThat(p.stats().running() + p.stats().queued()).isZero();
        }
    }
}
