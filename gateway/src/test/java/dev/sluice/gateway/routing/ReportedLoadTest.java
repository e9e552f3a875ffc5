package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sluice.gateway.routing.RoutingFixtures.FakeLoad;
import java.util.List;
import org.junit.jupiter.api.Test;

class ReportedLoadTest {
    private static final long HALF_LIFE = 60_000_000_000L;

    private final List<Worker> ws = RoutingFixtures.workers(WorkerRole.PREFILL, 2);
    private final FakeLoad view = new FakeLoad();
    private final long[] now = {0};
    private final ReportedLoad load = new ReportedLoad(HALF_LIFE, () -> now[0]);

    @Test
    void theFirstReadingIsABaselineAndTheGrowthCountsAfterIt() {
        view.promptTokens(ws.get(0), 1_000_000).promptTokens(ws.get(1), 50);
        assertThat(load.of(ws, view)).containsExactly(0, 0);
        view.promptTokens(ws.get(0), 1_004_000).promptTokens(ws.get(1), 1_050);
        assertThat(load.of(ws, view)).containsExactly(4_000, 1_000);
        // the same reading again adds nothing
        assertThat(load.of(ws, view)).containsExactly(4_000, 1_000);
    }

    @Test
    void theGrowthDecaysWithTheHalfLife() {
        view.promptTokens(ws.get(0), 0).promptTokens(ws.get(1), 0);
        load.of(ws, view);
        view.promptTokens(ws.get(0), 8_000);
        load.of(ws, view);
        now[0] += 2 * HALF_LIFE;
        assertThat(load.of(ws, view)[0]).isCloseTo(2_000, within(1e-6));
    }

    @Test
    void anUnknownCounterMakesTheFiguresUnusable() {
        view.promptTokens(ws.get(0), 0);
        assertThat(load.of(ws, view)).isNull();
        view.promptTokens(ws.get(1), 0);
        assertThat(load.of(ws, view)).isNotNull();
    }

    @Test
    void aCounterThatWentBackCountsOnFromItsNewValue() {
        view.promptTokens(ws.get(0), 10_000).promptTokens(ws.get(1), 0);
        load.of(ws, view);
        view.promptTokens(ws.get(0), 200); // the worker restarted
        assertThat(load.of(ws, view)[0]).isZero();
        view.promptTokens(ws.get(0), 700);
        assertThat(load.of(ws, view)[0]).isEqualTo(500);
    }
}
