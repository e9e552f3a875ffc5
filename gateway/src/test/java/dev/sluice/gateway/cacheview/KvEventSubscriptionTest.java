package dev.sluice.gateway.cacheview;

import static dev.sluice.gateway.cacheview.KvEventSubscriberTest.CLEARED;
import static dev.sluice.gateway.cacheview.KvEventSubscriberTest.chain;
import static dev.sluice.gateway.cacheview.KvEventSubscriberTest.send;
import static dev.sluice.gateway.cacheview.KvEventSubscriberTest.stored;
import static dev.sluice.gateway.cacheview.KvEventSubscriberTest.worker;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.KvEventsConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.testbed.testing.Poll;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMQException;

/**
 * {@code routing.kv_events} applied: every DP rank's stream of a worker feeds its one view (rank r
 * on the endpoint's port + r, as SGLang and vLLM place them), and the subscription follows the
 * worker list as a reload changes it. Real ZMQ PUB sockets on loopback.
 */
class KvEventSubscriptionTest {

    @Test
    void everyDpRankOfAWorkerFeedsItsOneView() throws Exception {
        try (ZContext ctx = new ZContext()) {
            ZMQ.Socket[] pubs = consecutivePubs(ctx, 2);
            String rank0 = pubs[0].getLastEndpoint();
            Worker w = worker(11);
            KvEventsConfig cfg = KvEventsConfig.builder().endpoints(Map.of(w.url(), rank0)).dpRanks(2).build();
            assertThat(cfg.rankEndpoints(rank0)).containsExactly(rank0, pubs[1].getLastEndpoint());
            try (KvEventSubscription s = KvEventSubscription.of(cfg, List.of(w))) {
                s.start();
                CacheView view = s.view();
                WorkerBlocks blocks = view.of(w).orElseThrow();
                assertThat(blocks.ranks()).isEqualTo(2);
                long[] seq0 = {0};
                long[] seq1 = {0};
                // a different block on each rank, with the same engine hash (each rank its own cache),
                // sent again at the poll's pace until both subscriptions are up and both are matched
                assertThat(Poll.eventually(Duration.ofSeconds(30), () -> {
                    send(pubs[0], seq0[0]++, stored(0x41, 1));
                    send(pubs[1], seq1[0]++, stored(0x41, 30));
                    return view.match(List.of(w), chain(1, 16))[0] == 16 && view.match(List.of(w), chain(30, 16))[0] == 16;
                })).as("both ranks heard").isTrue();
                send(pubs[1], seq1[0]++, CLEARED); // rank 1's cache cleared: rank 0's blocks stay
                assertThat(Poll.eventually(Duration.ofSeconds(10), () -> view.match(List.of(w), chain(30, 16))[0] == 0))
                        .isTrue();
                assertThat(view.match(List.of(w), chain(1, 16))).containsExactly(16);
                assertThat(blocks.size()).isEqualTo(1);
                assertThat(blocks.gaps()).isZero();
            }
        }
    }

    @Test
    void workersAddedAndRemovedByAReloadGetAndLoseTheirView() throws Exception {
        try (ZContext ctx = new ZContext()) {
            ZMQ.Socket pubA = ctx.createSocket(SocketType.PUB);
            pubA.bind("tcp://127.0.0.1:*");
            ZMQ.Socket pubB = ctx.createSocket(SocketType.PUB);
            pubB.bind("tcp://127.0.0.1:*");
            Worker a = worker(21);
            Worker b = worker(22);
            KvEventsConfig cfg = KvEventsConfig.builder().endpoints(Map.of(a.url(), pubA.getLastEndpoint(),
                    b.url(), pubB.getLastEndpoint())).build();
            try (KvEventSubscription s = KvEventSubscription.of(cfg, List.of(a))) {
                s.start();
                CacheView view = s.view();
                assertThat(view.workers()).containsExactly(a);
                assertThat(view.of(b)).isEmpty();
                long[] seqA = {0};
                KvEventSubscriberTest.awaitHeard(pubA, seqA, view.of(a).orElseThrow());

                s.follow(List.of(a, b)); // a reload added b
                WorkerBlocks blocksB = view.of(b).orElseThrow();
                long[] seqB = {0};
                KvEventSubscriberTest.awaitHeard(pubB, seqB, blocksB);
                send(pubB, seqB[0]++, stored(0x51, 1));
                assertThat(Poll.eventually(Duration.ofSeconds(10), () -> view.match(List.of(b), chain(1, 16))[0] == 16))
                        .isTrue();

                s.follow(List.of(b)); // a reload retired a
                assertThat(view.workers()).containsExactly(b);
                assertThat(view.of(a)).isEmpty();
                assertThat(view.usable(List.of(a, b))).as("a worker without a view: the local tree decides").isFalse();
                send(pubB, seqB[0]++, stored(0x53, 40)); // b's stream still flows
                assertThat(Poll.eventually(Duration.ofSeconds(10), () -> view.match(List.of(b), chain(40, 16))[0] == 16))
                        .isTrue();
                assertThat(view.usable(List.of(b))).isTrue();
                assertThat(blocksB.gaps()).isZero();

                s.follow(List.of(a, b)); // and a reload brought a back: a new view, heard anew
                WorkerBlocks again = view.of(a).orElseThrow();
                assertThat(again.events()).isZero();
                KvEventSubscriberTest.awaitHeard(pubA, seqA, again);
                assertThat(view.workers()).containsExactlyInAnyOrder(a, b);
            }
        }
    }

    /** PUB sockets on consecutive ports (a DP worker's ranks), retried until the ports are free. */
    private static ZMQ.Socket[] consecutivePubs(ZContext ctx, int n) {
        for (int attempt = 0; attempt < 50; attempt++) {
            ZMQ.Socket first = ctx.createSocket(SocketType.PUB);
            first.bind("tcp://127.0.0.1:*");
            String e = first.getLastEndpoint();
            int port = Integer.parseInt(e.substring(e.lastIndexOf(':') + 1));
            ZMQ.Socket[] out = new ZMQ.Socket[n];
            out[0] = first;
            Optional<ZMQ.Socket[]> got = Optional.of(out);
            for (int r = 1; r < n && got.isPresent(); r++) {
                ZMQ.Socket s = ctx.createSocket(SocketType.PUB);
                try {
                    s.bind("tcp://127.0.0.1:" + (port + r));
                    out[r] = s;
                } catch (ZMQException taken) {
                    ctx.destroySocket(s);
                    got = Optional.empty();
                }
            }
            if (got.isPresent()) {
                return out;
            }
            for (ZMQ.Socket s : out) {
                if (s != null) {
                    ctx.destroySocket(s);
                }
            }
        }
        throw new IllegalStateException("no " + n + " consecutive free ports");
    }
}
