package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FleetRoutedLoadTest {
    private static final long HALF_LIFE = 60_000_000_000L;

    private final List<Worker> ws = RoutingFixtures.workers(WorkerRole.PREFILL, 3);
    private final long[] now = {0};
    private final FleetRoutedLoad fleet = new FleetRoutedLoad(HALF_LIFE, () -> now[0]);

    @Test
    void ownShareIsThisReplicasPartOfWhatTheFleetSentEachWorker() {
        RecentLoad recent = new RecentLoad(HALF_LIFE, () -> now[0]);
        recent.add(ws.get(0), 7_000);
        recent.add(ws.get(1), 1_000);
        fleet.own(recent);
        fleet.peersReported(Map.of(ws.get(0).url(), 3_000.0, ws.get(1).url(), 9_000.0, ws.get(2).url(), 5_000.0));
        Map<String, Double> share = fleet.ownShareNow();
        assertThat(share.get(ws.get(0).url())).isCloseTo(0.7, within(1e-9));
        assertThat(share.get(ws.get(1).url())).isCloseTo(0.1, within(1e-9));
        assertThat(share.get(ws.get(2).url())).isZero(); // only the peers sent it anything
        // all decays alike: the parts hold while the figures fade, until nothing is left to judge by
        now[0] += 3 * HALF_LIFE;
        assertThat(fleet.ownShareNow().get(ws.get(0).url())).isCloseTo(0.7, within(1e-9));
        now[0] += 40 * HALF_LIFE;
        assertThat(fleet.ownShareNow()).isEmpty();
    }
}
