package dev.sluice.gateway.e2e;

import static dev.sluice.gateway.testing.PdTestbed.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.server.ConfigReload;
import dev.sluice.gateway.server.ReloadResult;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.DecodeServer;
import dev.sluice.testbed.sim.SimConfig;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Workers removed and added by a reload: a removed decode drains (no new requests; the stream it
 * carries finishes) and is retired once idle; an added one takes requests only after its health
 * check passed.
 */
class WorkerReloadEndToEndTest {
    private PdTestbed bed;
    private ConfigReload reload;

    @AfterEach
    void close() throws Exception {
        if (reload != null) {
            reload.close();
        }
        if (bed != null) {
            bed.healAndClose();
        }
    }

    private static String stream(int tokens) {
        return "{\"text\":\"hello\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":" + tokens + "}}";
    }

    private static int generations(DecodeServer d) {
        return (int) d.journal().stream().filter(r -> r.path().equals("/generate")).count();
    }

    @Test
    void aRemovedDecodeFinishesItsStreamThenRetiresAndAnAddedOneJoinsAfterItsCheck(@TempDir Path dir) throws Exception {
        bed = PdTestbed.start(1, 2, SimConfig.defaults().withDecodeStep(Duration.ofMillis(20)),
                "{connect: 1s, first_token: 30s, idle_stream: 10s}", "");
        DecodeServer first = bed.cluster.decodes().get(0);
        DecodeServer second = bed.cluster.decodes().get(1);
        Path file = dir.resolve("gateway.yaml");
        Files.writeString(file, bed.yaml);
        reload = bed.gateway.reloader(file);

        // a long stream on each decode (round robin), then the second decode leaves the configuration
        List<CompletableFuture<HttpResponse<String>>> longOnes = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            longOnes.add(bed.http.sendAsync(PdTestbed.postRequest(bed.uri("/generate"), stream(60)),
                    HttpResponse.BodyHandlers.ofString()));
        }
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.workers().decode().stream()
                .allMatch(w -> w.inflight() == 1))).isTrue();
        // dispatched is not yet received: on a busy machine the stream may reach the sim after the reload below
        assertThat(eventually(Duration.ofSeconds(5), () -> generations(first) == 1 && generations(second) == 1))
                .isTrue();
        Worker leaving = bed.gateway.workers().decode().get(1);
        Files.writeString(file, bed.yaml.replace("    - url: " + second.url() + "\n", ""));

        ReloadResult removed = reload.reload("test");

        assertThat(removed.result()).isEqualTo("applied");
        assertThat(removed.applied()).contains("workers");
        assertThat(leaving.state()).isEqualTo(WorkerState.DRAINING);
        int before = generations(second);
        for (int i = 0; i < 4; i++) { // new requests all go to the decode that stays
            assertThat(bed.post("/generate", stream(2)).statusCode()).isEqualTo(200);
        }
        assertThat(generations(second)).isEqualTo(before);
        for (CompletableFuture<HttpResponse<String>> c : longOnes) { // the drained stream finished whole
            HttpResponse<String> r = c.get();
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).contains("[DONE]").doesNotContain("\"error\"");
        }
        assertThat(eventually(Duration.ofSeconds(5), () -> bed.gateway.workers().decode().size() == 1
                && bed.gateway.drainingWorkers() == 0)).isTrue();
        // its gauges went with it (its counters stay: their history is still true)
        assertThat(bed.metrics()).doesNotContain("sluice_worker_up{role=\"decode\",worker=\"" + leaving.name() + "\"")
                .contains("sluice_worker_up{role=\"decode\",worker=\"" + bed.gateway.workers().decode().get(0).name() + "\"");

        // it comes back: a new worker, ejected ("starting") until its health check passes, then in rotation
        Files.writeString(file, bed.yaml);
        ReloadResult added = reload.reload("test");
        assertThat(added.applied()).contains("workers");
        assertThat(bed.gateway.workers().decode()).hasSize(2);
        Worker joined = bed.gateway.workers().decode().get(1);
        assertThat(joined).isNotSameAs(leaving);
        assertThat(eventually(Duration.ofSeconds(5), joined::routable)).isTrue();
        int beforeJoin = generations(second);
        for (int i = 0; i < 4; i++) {
            assertThat(bed.post("/generate", stream(2)).statusCode()).isEqualTo(200);
        }
        assertThat(generations(second)).isGreaterThan(beforeJoin);
        assertThat(bed.metric("sluice_worker_up{role=\"decode\",worker=\"" + joined.name() + "\"}")).isEqualTo(1.0);
    }
}
