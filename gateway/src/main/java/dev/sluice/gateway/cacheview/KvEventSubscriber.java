package dev.sluice.gateway.cacheview;

import dev.sluice.gateway.routing.Worker;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * Subscribes to the prefill workers' KV event publishers (ZMQ SUB, SGLang's and vLLM's
 * {@code [topic, seq, payload]} frames), one stream per worker and DP rank, on one thread of its
 * own, {@code sluice-kv-events}, which owns the ZMQ context and every socket, decodes each batch
 * and applies it to the worker's {@link WorkerBlocks}. Never an event loop, never the admission
 * lock.
 *
 * <p>Sequence numbers, per stream: a jump forward is a gap (batches lost: the rank's blocks are
 * forgotten and the worker's view is stale while it fills again); a jump back is a publisher that
 * restarted (its cache is new: the rank's blocks are cleared).
 *
 * <p>Silence: a JeroMQ SUB connection can come up dead (the TCP connection established, the
 * publisher's greeting never read, nothing ever delivered; docs/cache-affinity.md). A stream that
 * says nothing for {@code resubscribeAfter} while its worker was sent work that should have
 * stored blocks is closed and opened again, logged and counted.
 *
 * <p>Membership follows the worker list ({@link #follow}): the wanted streams are handed over
 * through an atomic reference and the thread opens and closes sockets to match.
 */
public final class KvEventSubscriber implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(KvEventSubscriber.class);

    private final CacheView view;
    private final byte[] topic;
    private final long resubscribeAfterNanos;
    private final long rebuildNanos;
    /** The streams wanted, per worker its ranks' endpoints; taken by the thread when set. */
    private final AtomicReference<Map<Worker, List<String>>> wanted = new AtomicReference<>();
    private final Thread thread;
    private volatile boolean running = true;

    /**
     * @param endpoints each subscribed worker's event endpoints, one per DP rank in rank order
     *                  ({@code tcp://host:port})
     * @param resubscribeAfterNanos how long a stream may stay silent while its worker is awaited
     * @param rebuildNanos how long a worker's view stays stale after a sequence gap
     */
    public KvEventSubscriber(CacheView view, Map<Worker, List<String>> endpoints, String topic,
                             long resubscribeAfterNanos, long rebuildNanos) {
        this.view = Objects.requireNonNull(view, "view");
        this.topic = topic.getBytes(StandardCharsets.UTF_8);
        this.resubscribeAfterNanos = resubscribeAfterNanos;
        this.rebuildNanos = rebuildNanos;
        follow(endpoints);
        this.thread = new Thread(this::run, "sluice-kv-events");
        thread.setDaemon(true);
    }

    public void start() {
        thread.start();
    }

    /**
     * The streams to hold from now on: workers not subscribed yet get a view and their streams,
     * workers no longer listed lose both. Any thread; the sockets follow on the subscriber's.
     */
    public void follow(Map<Worker, List<String>> endpoints) {
        Map<Worker, List<String>> copy = new LinkedHashMap<>();
        endpoints.forEach((w, e) -> copy.put(w, List.copyOf(e)));
        view.retain(copy.keySet());
        copy.forEach((w, e) -> view.add(w, e.size()));
        wanted.set(copy);
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t); // it may be idle without streams
        }
    }

    private void run() {
        try (ZContext ctx = new ZContext(1)) {
            List<EventStream> streams = new ArrayList<>();
            ZMQ.Poller poller = null;
            while (running && !Thread.currentThread().isInterrupted()) {
                Map<Worker, List<String>> next = wanted.getAndSet(null);
                if (next != null || poller == null) {
                    if (next != null) {
                        reconcile(ctx, streams, next);
                    }
                    poller = poller(ctx, poller, streams);
                }
                if (streams.isEmpty()) {
                    LockSupport.parkNanos(200_000_000L); // nothing to poll until follow() hands streams over
                } else if (poller.poll(200) > 0) {
                    for (int i = 0; i < streams.size(); i++) {
                        if (poller.pollin(i)) {
                            EventStream s = streams.get(i);
                            for (ZMsg m; (m = ZMsg.recvMsg(s.socket(), ZMQ.DONTWAIT)) != null; ) {
                                receive(s, m);
                            }
                        }
                    }
                }
                if (resubscribeSilent(ctx, streams)) {
                    poller = poller(ctx, poller, streams);
                }
            }
            for (EventStream s : streams) {
                s.close(ctx);
            }
        } catch (RuntimeException e) {
            if (running) {
                log.error("kv events subscriber failed error={}", e.toString(), e);
            }
        }
    }

    private void reconcile(ZContext ctx, List<EventStream> streams, Map<Worker, List<String>> next) {
        streams.removeIf(s -> {
            List<String> e = next.get(s.worker);
            boolean gone = e == null || e.size() <= s.rank || !e.get(s.rank).equals(s.endpoint)
                    || view.of(s.worker).orElse(null) != s.blocks;
            if (gone) {
                s.close(ctx);
                log.info("kv events unsubscribed worker={} rank={} endpoint={}", s.worker.url(), s.rank, s.endpoint);
            }
            return gone;
        });
        long now = System.nanoTime();
        next.forEach((w, endpoints) -> {
            WorkerBlocks blocks = view.of(w).orElse(null);
            for (int r = 0; r < endpoints.size() && blocks != null; r++) {
                int rank = r;
                if (streams.stream().noneMatch(s -> s.worker.equals(w) && s.rank == rank)) {
                    EventStream s = new EventStream(w, rank, endpoints.get(rank), blocks);
                    s.open(ctx, topic, now);
                    streams.add(s);
                    log.info("kv events subscribing worker={} rank={} endpoint={}", w.url(), rank, s.endpoint);
                }
            }
        });
    }

    private static ZMQ.Poller poller(ZContext ctx, ZMQ.Poller old, List<EventStream> streams) {
        if (old != null) {
            old.close();
        }
        ZMQ.Poller p = ctx.createPoller(Math.max(1, streams.size()));
        for (EventStream s : streams) {
            p.register(s.socket(), ZMQ.Poller.POLLIN);
        }
        return p;
    }

    /** Opens again each stream silent while its worker is awaited; whether any was. */
    private boolean resubscribeSilent(ZContext ctx, List<EventStream> streams) {
        long now = System.nanoTime();
        boolean any = false;
        for (EventStream s : streams) {
            if (s.silent(now, resubscribeAfterNanos)) {
                log.warn("kv events resubscribing worker={} rank={} endpoint={} silent_ms={} heard_before={}",
                        s.worker.url(), s.rank, s.endpoint, (now - s.blocks.awaitingSince()) / 1_000_000,
                        s.lastHeardNanos != 0);
                s.close(ctx);
                s.open(ctx, topic, now);
                s.blocks.resubscribes.incrementAndGet();
                any = true;
            }
        }
        return any;
    }

    private void receive(EventStream s, ZMsg msg) {
        long now = System.nanoTime();
        s.lastHeardNanos = now;
        if (msg.size() != 3) {
            s.blocks.malformed.incrementAndGet();
            log.warn("kv events malformed worker={} rank={} frames={}", s.worker.url(), s.rank, msg.size());
            return;
        }
        msg.pop(); // topic (the subscription filtered on it)
        byte[] seqBytes = msg.pop().getData();
        byte[] payload = msg.pop().getData();
        if (seqBytes.length != 8) {
            s.blocks.malformed.incrementAndGet();
            return;
        }
        long seq = ByteBuffer.wrap(seqBytes).getLong();
        KvEventBatch batch;
        try {
            batch = KvEventDecoder.decode(payload);
        } catch (IllegalArgumentException e) {
            s.blocks.malformed.incrementAndGet();
            log.warn("kv events undecodable worker={} rank={} seq={} error={}", s.worker.url(), s.rank, seq,
                    e.getMessage());
            return;
        }
        if (s.lastSeq >= 0 && seq <= s.lastSeq) {
            log.info("kv events publisher restarted worker={} rank={} seq={} last_seq={}", s.worker.url(), s.rank, seq,
                    s.lastSeq);
            s.blocks.clear(s.rank);
        } else if (s.lastSeq >= 0 && seq > s.lastSeq + 1) {
            // SGLang and vLLM number each rank's batches from 0, one by one (kv_events.py, see
            // docs/cache-affinity.md): a jump forward means batches were lost
            s.blocks.lost(s.rank, now, rebuildNanos);
            log.warn("kv events gap worker={} rank={} lost_batches={} seq={} (rank's blocks forgotten, view stale "
                    + "while it fills again)", s.worker.url(), s.rank, seq - s.lastSeq - 1, seq);
        }
        s.lastSeq = seq;
        s.blocks.apply(s.rank, batch, now);
    }

    /** The cache view this subscriber feeds. */
    public CacheView view() {
        return view;
    }

    @Override
    public void close() {
        running = false;
        try {
            thread.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
