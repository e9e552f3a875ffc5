package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.RoutingConfig.DpAware;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A worker's own dp_size decides its ranks; vLLM and unknown workers are routed whole, and why is said. */
class RankPlannerTest {
    private static WorkerIdentity sglang(int dp) {
        return new WorkerIdentity("sglang", "0.5.9", "decode", dp, List.of(), List.of());
    }

    @Test
    void sglangReportingSeveralRanksIsRoutedPerRank() {
        RankPlanner auto = new RankPlanner(DpAware.AUTO, 2);
        assertThat(auto.plan(sglang(4)).ranks()).isEqualTo(4);
        assertThat(auto.plan(sglang(4)).note()).isEqualTo("per rank: the worker reports dp_size 4");
        assertThat(auto.mismatch(sglang(4))).contains("reports dp_size 4 but routing.kv_events.dp_ranks is 2");
        assertThat(auto.mismatch(sglang(2))).isNull();
        assertThat(auto.plan(sglang(1)).perRank()).isFalse();
        assertThat(auto.plan(sglang(0)).note()).isEqualTo("per worker: the worker reports no dp_size");
        assertThat(new RankPlanner(DpAware.ALWAYS, 2).plan(sglang(0)).ranks()).as("kv_events.dp_ranks").isEqualTo(2);
        assertThat(new RankPlanner(DpAware.NEVER, 2).plan(sglang(4)).ranks()).isEqualTo(1);
    }

    @Test
    void vllmAndUnknownWorkersAreRoutedWhole() {
        RankPlanner always = new RankPlanner(DpAware.ALWAYS, 4);
        RankPlan vllm = always.plan(new WorkerIdentity("vllm", "0.11.0", "", 0, List.of(), List.of()));
        assertThat(vllm.ranks()).isEqualTo(1);
        assertThat(vllm.note()).contains("vLLM reports no dp_size");
        assertThat(always.plan(WorkerIdentity.UNKNOWN)).isEqualTo(RankPlan.PER_WORKER);
    }
}
