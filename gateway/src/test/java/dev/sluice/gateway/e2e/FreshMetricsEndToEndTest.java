package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A fresh gateway, before any request, exports every counter whose label values are known in
 * advance at 0: a dashboard shows 0 instead of "No data", and rate()/increase() see the first event.
 */
class FreshMetricsEndToEndTest {
    private PdTestbed bed;

    @AfterEach
    void close() throws Exception {
        if (bed != null) {
            bed.healAndClose();
        }
    }

    @Test
    void countersWithKnownLabelsExistAtZeroBeforeTheFirstEvent() throws Exception {
        bed = PdTestbed.start(SimConfig.defaults(), "{connect: 1s, first_token: 30s, idle_stream: 10s}");
        List<String> lines = bed.metrics().lines().map(l -> l.replace(",}", "}")).toList();
        String prefill = bed.cluster.prefills().get(0).url().replace("http://", "");
        String decode = bed.cluster.decodes().get(0).url().replace("http://", "");

        for (String sample : List.of(
                "sluice_rejections_total{reason=\"queue_full\"}",
                "sluice_rejections_total{reason=\"token_budget_exceeded\"}",
                "sluice_rejections_total{reason=\"no_capacity\"}",
                "sluice_aborts_total{cause=\"client_disconnect\"}",
                "sluice_aborts_total{cause=\"stranded_prefill\"}",
                "sluice_upstream_errors_total{kind=\"connect\",role=\"prefill\"}",
                "sluice_upstream_errors_total{kind=\"status\",role=\"decode\"}",
                "sluice_kv_transfer_failures_total{worker=\"" + prefill + "\"}",
                "sluice_kv_transfer_failures_total{worker=\"" + decode + "\"}",
                "sluice_requests_total{outcome=\"ok\",route=\"chat_completions\"}",
                "sluice_requests_total{outcome=\"rejected\",route=\"generate\"}",
                "sluice_requests_total{outcome=\"upstream_error\",route=\"completions\"}")) {
            assertThat(lines).as(sample).anyMatch(l -> l.equals(sample + " 0.0"));
        }
    }
}
