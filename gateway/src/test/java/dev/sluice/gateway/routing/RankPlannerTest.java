package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.RoutingConfig.DpAware;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A worker's own dp_size (SGLang) or engines (vLLM) decide its ranks; otherwise it is routed whole, and why is said. */
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

    /** vLLM's ranks are the engines its /metrics shows; one engine, or none seen, is a worker routed whole. */
    @Test
    void vllmIsRoutedPerEngineItsMetricsShowAndTheRankGoesInTheHeader() {
        RankPlanner auto = new RankPlanner(DpAware.AUTO, 0);
        RankPlan four = auto.plan(vllm(4));
        assertThat(four.ranks()).isEqualTo(4);
        assertThat(four.carrier()).isEqualTo(RankCarrier.HEADER);
        assertThat(four.note()).isEqualTo("per rank: vLLM's /metrics shows 4 engines (the rank goes in X-data-parallel-rank)");
        assertThat(auto.plan(vllm(1)).perRank()).isFalse();
        assertThat(auto.plan(vllm(1)).note()).startsWith("per worker: vLLM's /metrics shows one engine");
        assertThat(auto.plan(vllm(0)).perRank()).isFalse();
        assertThat(auto.plan(vllm(0)).note()).startsWith("per worker: vLLM's /metrics shows no engine");
        // always takes no guess for vLLM (routing.kv_events.dp_ranks is SGLang's fallback), never routes it whole
        assertThat(new RankPlanner(DpAware.ALWAYS, 4).plan(vllm(0)).ranks()).isEqualTo(1);
        assertThat(new RankPlanner(DpAware.NEVER, 0).plan(vllm(4)).ranks()).isEqualTo(1);
        assertThat(auto.plan(sglang(4)).carrier()).as("SGLang's rank is a body field").isEqualTo(RankCarrier.BODY_FIELD);
        assertThat(auto.mismatch(vllm(4))).as("no KV event subscription (dp_ranks 0): nothing to compare").isNull();
        // with one, the engines' streams follow the engines, and a dp_ranks that says otherwise is named
        assertThat(new RankPlanner(DpAware.AUTO, 1).mismatch(vllm(4)))
                .contains("shows 4 engines but routing.kv_events.dp_ranks is 1");
        assertThat(new RankPlanner(DpAware.AUTO, 4).mismatch(vllm(4))).isNull();
        assertThat(new RankPlanner(DpAware.AUTO, 2).mismatch(vllm(1))).as("one engine: dp_ranks decides").isNull();
    }

    @Test
    void unknownWorkersAreRoutedWhole() {
        assertThat(new RankPlanner(DpAware.ALWAYS, 4).plan(WorkerIdentity.UNKNOWN)).isEqualTo(RankPlan.PER_WORKER);
    }

    private static WorkerIdentity vllm(int engines) {
        return new WorkerIdentity("vllm", "0.11.0", "", 0, List.of(), List.of()).withEngines(engines);
    }
}
