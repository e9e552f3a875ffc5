package dev.sluice.testbed.sim;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Publishes a simulated server's prefix-cache events exactly as SGLang's {@code ZmqEventPublisher}
 * does (sgl-project/sglang@612d579090db24ec7c47cc5ca6b83e0c649b8c28
 * python/sglang/srt/disaggregation/kv_events.py): a PUB socket bound to the endpoint; each batch is
 * one multipart message {@code [topic, seq, payload]} with {@code seq} an 8-byte big-endian counter
 * from 0 and {@code payload} the msgpack of {@code KVEventBatch} as msgspec encodes an
 * {@code array_like}, {@code tag=True} struct: {@code [ts, [events...], attn_dp_rank]}, each event
 * {@code [tag, fields...]}: {@code ["BlockStored", [hash], parent|nil, [token ids], block_size,
 * lora_id=nil]}, {@code ["BlockRemoved", [hash]]}, {@code ["AllBlocksCleared"]}. One page per
 * BlockStored, as SGLang's radix cache records them
 * (sgl-project/sglang@006b0e3d317f1cd4a7300e919a4eaa878b1947e7
 * python/sglang/srt/mem_cache/radix_cache.py:_record_store_event). No replay socket.
 *
 * <p>One publisher per attention-DP rank, as SGLang creates one per scheduler
 * ({@code SchedulerMetricsMixin.init_kv_events}: {@code EventPublisherFactory.create(kv_events_config,
 * self.attn_dp_rank)}, sgl-project/sglang@78ac30c2056f2c25089c1d3203c3d5c13dc3d946
 * python/sglang/srt/managers/scheduler_metrics_mixin.py): bound to the endpoint's port + rank
 * ({@code offset_endpoint_port}), its own sequence from 0, every batch stamped with its
 * {@code attn_dp_rank} ({@code ZmqEventPublisher.publish} fills it in, 612d579 above).
 *
 * <p>The server's event loop only offers batches to a bounded queue (dropped when full, as SGLang's
 * publisher drops past its high-water mark: subscribers then see a sequence gap); one thread of
 * its own encodes and sends.
 */
final class KvEventPublisher implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(KvEventPublisher.class);
    private static final List<KvEvent> STOP = new java.util.ArrayList<>(); // compared by identity

    private final ZContext context = new ZContext(1);
    private final ZMQ.Socket pub;
    private final String endpoint;
    private final byte[] topic;
    private final BlockingQueue<List<KvEvent>> queue = new ArrayBlockingQueue<>(100_000);
    private final Thread thread;
    private final AtomicLong seq = new AtomicLong();
    private final int rank;

    /**
     * @param endpoint where to bind, e.g. {@code tcp://127.0.0.1:5557}, or port {@code *} for any free one
     * @param rank     the attention-DP rank whose cache this publishes (stamped on every batch)
     */
    KvEventPublisher(String endpoint, String topic, int rank) {
        Objects.requireNonNull(endpoint, "endpoint");
        this.rank = rank;
        this.topic = topic.getBytes(StandardCharsets.UTF_8);
        this.pub = context.createSocket(SocketType.PUB);
        pub.setSndHWM(100_000);
        pub.setLinger(0);
        try {
            pub.bind(endpoint);
        } catch (RuntimeException e) {
            context.close(); // the port is taken: the caller may try another
            throw e;
        }
        this.endpoint = pub.getLastEndpoint();
        // the socket is handed to the thread here (start() orders the writes above before its use)
        this.thread = new Thread(this::run, "sim-kv-events-" + rank);
        thread.setDaemon(true);
        thread.start();
        log.info("kv events publishing endpoint={} rank={}", this.endpoint, rank);
    }

    /** The bound endpoint (with the real port when bound to {@code *}). */
    String endpoint() {
        return endpoint;
    }

    /** Queues one batch; never blocks (a full queue drops it, and the subscriber sees a gap). */
    void publish(List<KvEvent> batch) {
        if (!batch.isEmpty() && !queue.offer(List.copyOf(batch))) {
            seq.incrementAndGet(); // a dropped batch still takes its number: the subscriber sees the loss as a gap
        }
    }

    private void run() {
        try {
            while (true) {
                List<KvEvent> batch = queue.poll(1, TimeUnit.SECONDS);
                if (batch == STOP) {
                    return;
                }
                if (batch != null) {
                    byte[] payload = encode(System.currentTimeMillis() / 1000.0, batch, rank);
                    pub.sendMore(topic);
                    pub.sendMore(ByteBuffer.allocate(8).putLong(seq.getAndIncrement()).array());
                    pub.send(payload);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            log.error("kv events publisher failed endpoint={} error={}", endpoint, e.toString(), e);
        } finally {
            context.close();
        }
    }

    /** The msgpack of one {@code KVEventBatch} (see the class comment). */
    static byte[] encode(double ts, List<KvEvent> events, int attnDpRank) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3);
            p.packDouble(ts);
            p.packArrayHeader(events.size());
            for (KvEvent e : events) {
                if (e instanceof KvEvent.Stored s) {
                    p.packArrayHeader(6);
                    p.packString("BlockStored");
                    p.packArrayHeader(1);
                    p.packLong(s.hash());
                    if (s.parent() == null) {
                        p.packNil();
                    } else {
                        p.packLong(s.parent());
                    }
                    p.packArrayHeader(s.tokens().length);
                    for (int t : s.tokens()) {
                        p.packInt(t);
                    }
                    p.packInt(s.tokens().length); // block_size = len(page_tokens)
                    p.packNil(); // lora_id
                } else if (e instanceof KvEvent.Removed r) {
                    p.packArrayHeader(2);
                    p.packString("BlockRemoved");
                    p.packArrayHeader(1);
                    p.packLong(r.hash());
                } else {
                    p.packArrayHeader(1);
                    p.packString("AllBlocksCleared");
                }
            }
            p.packInt(attnDpRank);
            return p.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException("msgpack into memory cannot fail", e);
        }
    }

    @Override
    public void close() {
        queue.clear();
        queue.offer(STOP);
        try {
            thread.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
