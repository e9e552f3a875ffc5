package dev.sluice.gateway.cacheview;

import dev.sluice.gateway.routing.Worker;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * Subscribes to each prefill worker's KV event publisher (ZMQ SUB, SGLang's and vLLM's
 * {@code [topic, seq, payload]} frames) on one thread of its own, {@code sluice-kv-events}, which
 * owns the ZMQ context and every socket, decodes each batch and applies it to the worker's
 * {@link WorkerBlocks}. Never an event loop, never the admission lock.
 *
 * <p>Sequence numbers: a jump forward is a gap (batches lost: counted and logged; the index is
 * kept, see docs/cache-affinity.md); a jump back is a publisher that restarted (its cache is new:
 * the index is cleared).
 */
public final class KvEventSubscriber implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(KvEventSubscriber.class);

    private final CacheView view;
    private final List<Source> sources = new ArrayList<>();
    private final byte[] topic;
    private final Thread thread;
    private volatile boolean running = true;

    /** One worker's stream. */
    private static final class Source {
        final Worker worker;
        final String endpoint;
        final WorkerBlocks blocks;
        long lastSeq = -1;

        Source(Worker worker, String endpoint, WorkerBlocks blocks) {
            this.worker = worker;
            this.endpoint = endpoint;
            this.blocks = blocks;
        }
    }

    /** @param endpoints each subscribed worker's event endpoint ({@code tcp://host:port}) */
    public KvEventSubscriber(CacheView view, Map<Worker, String> endpoints, String topic) {
        this.view = Objects.requireNonNull(view, "view");
        this.topic = topic.getBytes(StandardCharsets.UTF_8);
        endpoints.forEach((w, e) -> sources.add(new Source(w, e,
                view.of(w).orElseThrow(() -> new IllegalArgumentException("not in the view: " + w)))));
        this.thread = new Thread(this::run, "sluice-kv-events");
        thread.setDaemon(true);
    }

    public void start() {
        thread.start();
    }

    private void run() {
        try (ZContext ctx = new ZContext(1)) {
            ZMQ.Poller poller = ctx.createPoller(sources.size());
            List<ZMQ.Socket> sockets = new ArrayList<>();
            for (Source s : sources) {
                ZMQ.Socket sub = ctx.createSocket(SocketType.SUB);
                sub.setLinger(0);
                sub.setRcvHWM(100_000);
                sub.subscribe(topic);
                sub.connect(s.endpoint); // ZMQ reconnects by itself while the worker is away
                poller.register(sub, ZMQ.Poller.POLLIN);
                sockets.add(sub);
                log.info("kv events subscribing worker={} endpoint={}", s.worker.url(), s.endpoint);
            }
            while (running && !Thread.currentThread().isInterrupted()) {
                if (poller.poll(200) <= 0) {
                    continue;
                }
                for (int i = 0; i < sockets.size(); i++) {
                    if (poller.pollin(i)) {
                        for (ZMsg m; (m = ZMsg.recvMsg(sockets.get(i), ZMQ.DONTWAIT)) != null; ) {
                            receive(sources.get(i), m);
                        }
                    }
                }
            }
        } catch (RuntimeException e) {
            if (running) {
                log.error("kv events subscriber failed error={}", e.toString(), e);
            }
        }
    }

    private void receive(Source s, ZMsg msg) {
        if (msg.size() != 3) {
            s.blocks.malformed.incrementAndGet();
            log.warn("kv events malformed worker={} frames={}", s.worker.url(), msg.size());
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
            log.warn("kv events undecodable worker={} seq={} error={}", s.worker.url(), seq, e.getMessage());
            return;
        }
        if (s.lastSeq >= 0 && seq <= s.lastSeq) {
            log.info("kv events publisher restarted worker={} seq={} last_seq={}", s.worker.url(), seq, s.lastSeq);
            s.blocks.clear();
        } else if (s.lastSeq >= 0 && seq > s.lastSeq + 1) {
            s.blocks.gap();
            log.warn("kv events gap worker={} lost_batches={} seq={}", s.worker.url(), seq - s.lastSeq - 1, seq);
        }
        s.lastSeq = seq;
        s.blocks.apply(batch, System.nanoTime());
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
