package dev.sluice.gateway.cacheview;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.testbed.testing.Poll;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * The subscriber against a bare ZMQ PUB socket on loopback sending SGLang's frames
 * ({@code [topic, seq (8 bytes big-endian), msgpack]}, payloads written out by hand): batches
 * applied, a sequence gap counted, a sequence that starts again read as a restarted publisher.
 */
class KvEventSubscriberTest {
    /** [ts 0.0, [["BlockStored", [h], nil, [first..first+15], 16, nil]], 0] */
    private static byte[] stored(int h, int first) {
        StringBuilder ids = new StringBuilder("dc 0010"); // array16 of 16 token ids (positive fixints)
        for (int t = first; t < first + 16; t++) {
            ids.append(String.format(" %02x", t));
        }
        return HexFormat.of().parseHex(("93 cb 0000000000000000 91 96 ab 426c6f636b53746f726564 91 "
                + String.format("%02x", h) + " c0 " + ids + " 10 c0 00").replace(" ", ""));
    }

    private static final byte[] CLEARED = HexFormat.of().parseHex(
            "93cb000000000000000091" + "91b0416c6c426c6f636b73436c6561726564" + "00");

    @Test
    void batchesGapsAndRestarts() throws Exception {
        Worker w = new Worker(WorkerRole.PREFILL, new WorkerEndpoint("http://127.0.0.1:1", "127.0.0.1", 1, null));
        try (ZContext ctx = new ZContext()) {
            ZMQ.Socket pub = ctx.createSocket(SocketType.PUB);
            pub.bind("tcp://127.0.0.1:*");
            CacheView view = new CacheView(List.of(w), 1_000, Duration.ofSeconds(30).toNanos(), System::nanoTime);
            WorkerBlocks blocks = view.of(w).orElseThrow();
            try (KvEventSubscriber sub = new KvEventSubscriber(view, Map.of(w, pub.getLastEndpoint()), "")) {
                sub.start();
                // PUB drops messages until the subscription arrives: send clears, numbered on, until one is heard
                long[] seq = {0};
                assertThat(Poll.eventually(Duration.ofSeconds(30), () -> {
                    send(pub, seq[0]++, CLEARED);
                    return blocks.events() > 0;
                })).as("heard: events %d, malformed %d", blocks.events(), blocks.malformed.get()).isTrue();
                long next = seq[0];
                send(pub, next, stored(0x21, 1));
                send(pub, next + 2, stored(0x22, 20)); // next + 1 lost
                // ZMQ keeps order: once the gap is seen, everything before it was applied
                assertThat(Poll.eventually(Duration.ofSeconds(10), () -> blocks.gaps() == 1)).isTrue();
                assertThat(blocks.size()).as("two root blocks").isEqualTo(2);
                assertThat(blocks.freshness(System.nanoTime(), Duration.ofSeconds(30).toNanos()))
                        .isEqualTo(WorkerBlocks.Freshness.FRESH);

                send(pub, 0, stored(0x23, 40)); // the sequence starts again: a new publisher, a new cache
                assertThat(Poll.eventually(Duration.ofSeconds(10), () -> blocks.size() == 1)).isTrue();
                assertThat(blocks.gaps()).isEqualTo(1);
            }
        }
    }

    private static void send(ZMQ.Socket pub, long seq, byte[] payload) {
        pub.sendMore(new byte[0]);
        pub.sendMore(ByteBuffer.allocate(8).putLong(seq).array());
        pub.send(payload);
    }
}
