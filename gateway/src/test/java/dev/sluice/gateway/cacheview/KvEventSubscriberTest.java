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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * The subscriber against bare ZMQ PUB sockets on loopback sending SGLang's frames
 * ({@code [topic, seq (8 bytes big-endian), msgpack]}, payloads written out by hand): batches
 * applied, a sequence gap making the rank's view stale while it fills again, a sequence that starts
 * again read as a restarted publisher, a stream that goes silent while its worker is awaited
 * opened again.
 */
class KvEventSubscriberTest {
    private static final long STALE_AFTER = Duration.ofMillis(400).toNanos();

    /** [ts 0.0, [["BlockStored", [h], nil, [first..first+15], 16, nil]], 0] */
    static byte[] stored(int h, int first) {
        StringBuilder ids = new StringBuilder("dc 0010"); // array16 of 16 token ids (positive fixints)
        for (int t = first; t < first + 16; t++) {
            ids.append(String.format(" %02x", t));
        }
        return HexFormat.of().parseHex(("93 cb 0000000000000000 91 96 ab 426c6f636b53746f726564 91 "
                + String.format("%02x", h) + " c0 " + ids + " 10 c0 00").replace(" ", ""));
    }

    static final byte[] CLEARED = HexFormat.of().parseHex(
            "93cb000000000000000091" + "91b0416c6c426c6f636b73436c6561726564" + "00");

    static Worker worker(int port) {
        return new Worker(WorkerRole.PREFILL, new WorkerEndpoint("http://127.0.0.1:" + port, "127.0.0.1", port, null));
    }

    /** The prompt chain of {@link #ids}, as a request carries it. */
    static long[] chain(int first, int n) {
        return dev.sluice.gateway.routing.PromptChain.of(ids(first, n));
    }

    static int[] ids(int first, int n) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = first + i;
        }
        return out;
    }

    @Test
    void batchesGapsAndRestarts() throws Exception {
        Worker w = worker(1);
        try (ZContext ctx = new ZContext()) {
            ZMQ.Socket pub = publisher(ctx);
            CacheView view = view();
            try (KvEventSubscriber sub = subscriber(view, w, pub)) {
                WorkerBlocks blocks = view.of(w).orElseThrow();
                sub.start();
                long[] seq = {0};
                awaitHeard(pub, seq, blocks);
                long next = seq[0];
                send(pub, next, stored(0x21, 1));
                assertThat(Poll.eventually(Duration.ofSeconds(10), () -> blocks.size() == 1)).isTrue();
                assertThat(view.usable(List.of(w))).isTrue();
                assertThat(view.match(List.of(w), chain(1, 20))).containsExactly(16);

                send(pub, next + 2, stored(0x22, 20)); // next + 1 lost: what it removed may still be claimed
                // the gap is counted before the batch after it is applied: wait for both
                assertThat(Poll.eventually(Duration.ofSeconds(10), () -> blocks.gaps() == 1 && blocks.size() == 1))
                        .as("the blocks from before the gap are forgotten; the new one kept").isTrue();
                assertThat(view.match(List.of(w), chain(1, 20))).containsExactly(0);
                assertThat(view.freshness(w)).as("rebuilding").isEqualTo(WorkerBlocks.Freshness.STALE);
                assertThat(view.usable(List.of(w))).as("cache_aware falls back to the local tree").isFalse();
                assertThat(Poll.eventually(Duration.ofSeconds(5), () -> view.usable(List.of(w))))
                        .as("fresh again after stale_after").isTrue();

                send(pub, 0, stored(0x23, 40)); // the sequence starts again: a new publisher, a new cache
                assertThat(Poll.eventually(Duration.ofSeconds(10), () -> view.match(List.of(w), chain(40, 16))[0] == 16))
                        .isTrue();
                assertThat(blocks.size()).isEqualTo(1);
                assertThat(blocks.gaps()).isEqualTo(1);
                assertThat(view.freshness(w)).isEqualTo(WorkerBlocks.Freshness.FRESH);
            }
        }
    }

    /**
     * A stream that goes silent (connection open, nothing delivered) while its worker was sent
     * work: the view turns stale after stale_after, the stream is opened again after
     * resubscribe_after, and the events flow again.
     */
    @Test
    void aStreamSilentWhileItsWorkerIsAwaitedTurnsStaleAndIsOpenedAgain() throws Exception {
        Worker w = worker(2);
        AtomicBoolean publishing = new AtomicBoolean(true);
        try (ZContext ctx = new ZContext()) {
            ZMQ.Socket pub = ctx.createSocket(SocketType.PUB);
            pub.bind("tcp://127.0.0.1:*");
            String bound = pub.getLastEndpoint();
            AtomicLong seq = new AtomicLong();
            try (FreezingRelay relay = new FreezingRelay(Integer.parseInt(bound.substring(bound.lastIndexOf(':') + 1)))) {
                CacheView view = new CacheView(List.of(), 1_000, STALE_AFTER, System::nanoTime);
                // the publisher keeps publishing a batch every 20 ms, as a busy worker does
                Thread publisher = new Thread(() -> {
                    while (publishing.get()) {
                        long s = seq.getAndIncrement();
                        send(pub, s, stored(0x30 + (int) (s % 64), 1));
                        try {
                            Thread.sleep(20); // the publisher's pace, not a synchronisation
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }, "test-publisher");
                try (KvEventSubscriber sub = new KvEventSubscriber(view, Map.of(w, List.of(relay.endpoint())), "",
                        Duration.ofMillis(1_200).toNanos(), STALE_AFTER)) {
                    WorkerBlocks blocks = view.of(w).orElseThrow();
                    assertThat(view.freshness(w)).isEqualTo(WorkerBlocks.Freshness.MISSING);
                    assertThat(view.usable(List.of(w))).isFalse();
                    sub.start();
                    publisher.start();
                    assertThat(Poll.eventually(Duration.ofSeconds(10), () -> view.usable(List.of(w)))).isTrue();

                    relay.freeze();
                    long before = blocks.events();
                    // work keeps going to the worker: four blocks the view does not hold each time, events
                    // expected (sent again, as batches already in flight when the relay froze clear the mark)
                    assertThat(Poll.eventually(Duration.ofSeconds(5), () -> {
                        view.dispatched(w, chain(100, 64));
                        return view.freshness(w) == WorkerBlocks.Freshness.STALE;
                    })).as("silent past stale_after while awaited").isTrue();
                    assertThat(view.usable(List.of(w))).isFalse();
                    assertThat(blocks.resubscribes()).as("not yet: resubscribe_after is longer").isZero();

                    assertThat(Poll.eventually(Duration.ofSeconds(10), () -> blocks.resubscribes() >= 1)).isTrue();
                    assertThat(Poll.eventually(Duration.ofSeconds(10), () -> blocks.events() > before + 5))
                            .as(() -> "events again on the new connection: " + relay + ", resubscribes="
                                    + blocks.resubscribes() + ", events=" + blocks.events() + " (" + before
                                    + " at the freeze), published=" + seq.get()).isTrue();
                    // a reopened stream that stays silent too is reopened again (seen once on this loaded VM)
                    assertThat(relay.accepted.get() - relay.failed.get()).as("connections relayed").isGreaterThanOrEqualTo(2);
                    assertThat(blocks.gaps()).as("what was published meanwhile shows as a gap").isEqualTo(1);
                    assertThat(Poll.eventually(Duration.ofSeconds(5), () -> view.usable(List.of(w))))
                            .as("fresh again once rebuilt").isTrue();
                } finally {
                    publishing.set(false);
                    publisher.join(2_000);
                }
            }
        }
    }

    /**
     * A frame whose msgpack header claims 2^31-1 elements (array32 0x7fffffff, as seen in issue 29:
     * it ended the thread with OutOfMemoryError), one whose block hash claims a 2 GiB byte string,
     * and one that is not msgpack at all: each counted as malformed and skipped; the valid batches
     * after them are applied, by the same thread, still alive.
     */
    @Test
    void hostileFramesAreCountedAndSkippedAndTheEventsAfterThemApplied() throws Exception {
        Worker w = worker(3);
        try (ZContext ctx = new ZContext()) {
            ZMQ.Socket pub = publisher(ctx);
            CacheView view = view();
            try (KvEventSubscriber sub = subscriber(view, w, pub)) {
                WorkerBlocks blocks = view.of(w).orElseThrow();
                sub.start();
                long[] seq = {0};
                awaitHeard(pub, seq, blocks);
                send(pub, seq[0]++, HexFormat.of().parseHex("dd7fffffff" + "c0c0c0"));
                // [0.0, [["BlockStored", [bin32 of 2^31-1 bytes ...
                send(pub, seq[0]++, HexFormat.of().parseHex("93cb0000000000000000" + "91" + "96"
                        + "ab426c6f636b53746f726564" + "91" + "c67fffffff" + "0102"));
                send(pub, seq[0]++, new byte[] {(byte) 0xc1, 0, 1, 2});
                send(pub, seq[0]++, stored(0x41, 1));
                assertThat(Poll.eventually(Duration.ofSeconds(10), () -> blocks.size() == 1)).isTrue();
                assertThat(view.match(List.of(w), chain(1, 16))).containsExactly(16);
                assertThat(blocks.malformed()).isEqualTo(3);
                assertThat(blocks.gaps()).as("what the skipped batches held is unknown (removals too): the rank is "
                        + "rebuilt, as after lost batches, so that the view never over-claims").isEqualTo(1);
                assertThat(Thread.getAllStackTraces().keySet().stream()
                        .anyMatch(t -> t.getName().equals("sluice-kv-events") && t.isAlive())).isTrue();
            }
        }
    }

    /** A frame over max_message_size is dropped by ZMQ (MAXMSGSIZE) with its connection; the stream comes back. */
    @Test
    void aFrameOverTheMaximumSizeIsDroppedAndTheStreamComesBack() throws Exception {
        Worker w = worker(4);
        try (ZContext ctx = new ZContext()) {
            ZMQ.Socket pub = publisher(ctx);
            CacheView view = view();
            try (KvEventSubscriber sub = new KvEventSubscriber(view, Map.of(w, List.of(pub.getLastEndpoint())), "",
                    Duration.ofSeconds(30).toNanos(), STALE_AFTER, 64 << 10)) {
                WorkerBlocks blocks = view.of(w).orElseThrow();
                sub.start();
                long[] seq = {0};
                awaitHeard(pub, seq, blocks);
                long before = blocks.events();
                byte[] big = new byte[256 << 10];
                big[0] = (byte) 0x93; // would be a batch; never read
                send(pub, seq[0]++, big);
                assertThat(Poll.eventually(Duration.ofSeconds(20), () -> {
                    send(pub, seq[0]++, stored(0x42, 1));
                    return blocks.size() == 1;
                })).as("events again after the oversized frame").isTrue();
                assertThat(blocks.events()).isGreaterThan(before);
                assertThat(blocks.size()).isEqualTo(1);
            }
        }
    }

    /**
     * The subscriber's ZMQ context loses its I/O thread (killed here with an Error thrown into it, as an
     * OutOfMemoryError would: JeroMQ 0.6.0's poller catches RuntimeExceptions, not Errors): the stream, up,
     * goes silent with no event at all; the context's liveness probe finds it within its deadline, a new
     * context takes over, and events flow again. Thread.stop is gone from JDK 20 on: skipped there.
     */
    @Test
    @SuppressWarnings({"deprecation", "removal"}) // Thread.stop: an Error the thread did not expect
    void aContextWhoseIoThreadDiedIsReplacedAndTheEventsFlowAgain() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(Runtime.version().feature() < 20, "Thread.stop needs JDK < 20");
        Worker w = worker(5);
        try (ZContext ctx = new ZContext()) {
            ZMQ.Socket pub = publisher(ctx);
            CacheView view = view();
            java.util.Set<Thread> before = ioThreads();
            try (KvEventSubscriber sub = subscriber(view, w, pub)) {
                WorkerBlocks blocks = view.of(w).orElseThrow();
                sub.start();
                long[] seq = {0};
                awaitHeard(pub, seq, blocks);
                java.util.Set<Thread> mine = ioThreads();
                mine.removeAll(before);
                assertThat(mine).as("the subscriber's context's I/O thread").hasSize(1);
                Thread io = mine.iterator().next();
                io.stop(); // delivered when the thread is back from its selector: traffic wakes it
                for (long end = System.nanoTime() + 5_000_000_000L; io.isAlive() && System.nanoTime() < end; ) {
                    send(pub, seq[0]++, CLEARED);
                    io.join(100);
                }
                assertThat(io.isAlive()).as("the I/O thread died").isFalse();
                Thread.sleep(300); // what the thread delivered before it died is read
                long heard = blocks.events();
                for (int i = 0; i < 20; i++) { // 2 s of events that no longer arrive: the failure, reproduced
                    send(pub, seq[0]++, CLEARED);
                    Thread.sleep(100); // the publisher's pace, not a synchronisation
                }
                assertThat(blocks.events()).as("nothing arrives through a dead I/O thread").isEqualTo(heard);
                assertThat(blocks.up(0)).as("and nothing said the stream went down").isTrue();
                assertThat(Poll.eventually(Duration.ofSeconds(30), () -> {
                    send(pub, seq[0]++, CLEARED);
                    return blocks.events() > heard;
                })).as("events again, on a new context").isTrue();
                assertThat(blocks.resubscribes()).as("counted as the stream opened again").isEqualTo(1);
            }
        }
    }

    private static java.util.Set<Thread> ioThreads() {
        java.util.Set<Thread> out = new java.util.HashSet<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("iothread-") && t.isAlive()) {
                out.add(t);
            }
        }
        return out;
    }

    /** A PUB socket bound on a free loopback port. */
    static ZMQ.Socket publisher(ZContext ctx) {
        ZMQ.Socket pub = ctx.createSocket(SocketType.PUB);
        pub.bind("tcp://127.0.0.1:*");
        return pub;
    }

    /** A subscriber of {@code w}'s one stream, published by {@code pub}; resubscribe_after 30 s. */
    static KvEventSubscriber subscriber(CacheView view, Worker w, ZMQ.Socket pub) {
        return new KvEventSubscriber(view, Map.of(w, List.of(pub.getLastEndpoint())), "",
                Duration.ofSeconds(30).toNanos(), STALE_AFTER);
    }

    static CacheView view() {
        return new CacheView(List.of(), 1_000, STALE_AFTER, System::nanoTime);
    }

    /** Sends clears, numbered on, until the subscriber hears one (PUB drops all before the subscription). */
    static void awaitHeard(ZMQ.Socket pub, long[] seq, WorkerBlocks blocks) throws Exception {
        assertThat(Poll.eventually(Duration.ofSeconds(30), () -> {
            send(pub, seq[0]++, CLEARED);
            return blocks.events() > 0;
        })).as("heard: events %d, malformed %d", blocks.events(), blocks.malformed.get()).isTrue();
    }

    static void send(ZMQ.Socket pub, long seq, byte[] payload) {
        pub.sendMore(new byte[0]);
        pub.sendMore(ByteBuffer.allocate(8).putLong(seq).array());
        pub.send(payload);
    }
}
