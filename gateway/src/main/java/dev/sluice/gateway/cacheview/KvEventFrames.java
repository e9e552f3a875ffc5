package dev.sluice.gateway.cacheview;

import java.nio.ByteBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.ZMsg;

/**
 * What {@link KvEventSubscriber} does with one stream's frames ({@code [topic, seq, payload]}): checks
 * their shape and size, decodes the batch, follows the stream's sequence numbers (a jump forward is a
 * gap: the rank's blocks are forgotten and its view is stale while it fills again; a jump back is a
 * publisher that restarted: the rank's blocks are cleared) and applies the batch to the worker's
 * {@link WorkerBlocks}. Touched only on the subscriber's thread; logs under the subscriber's name.
 */
final class KvEventFrames {
    private static final Logger log = LoggerFactory.getLogger(KvEventSubscriber.class);
    private static final long LOG_EVERY_NANOS = 10_000_000_000L;

    private final long maxMessageSize;
    private final long rebuildNanos;

    /**
     * @param maxMessageSize the largest payload applied (larger ones are malformed)
     * @param rebuildNanos   how long a worker's view stays stale after a sequence gap
     */
    KvEventFrames(long maxMessageSize, long rebuildNanos) {
        this.maxMessageSize = maxMessageSize;
        this.rebuildNanos = rebuildNanos;
    }

    /**
     * One frame, whatever it holds: a frame that cannot be read or applied is counted as
     * malformed and skipped, and the stream goes on. (The decoder checks every length before it
     * allocates, so a hostile header is an exception here, never an OutOfMemoryError.)
     */
    void receiveSafely(EventStream s, ZMsg msg) {
        try {
            receive(s, msg);
        } catch (Throwable t) {
            malformed(s, "error=" + t);
        }
    }

    private void malformed(EventStream s, String why) {
        s.blocks.malformed.incrementAndGet();
        long now = System.nanoTime();
        if (s.malformedLoggedNanos == 0 || now - s.malformedLoggedNanos > LOG_EVERY_NANOS) {
            log.warn("kv events malformed worker={} rank={} {} skipped_since_last_log={}", s.worker.url(), s.rank, why,
                    s.unloggedMalformed);
            s.malformedLoggedNanos = now;
            s.unloggedMalformed = 0;
        } else {
            s.unloggedMalformed++;
        }
    }

    private void receive(EventStream s, ZMsg msg) {
        long now = System.nanoTime();
        s.lastHeardNanos = now;
        if (msg.size() != 3) {
            malformed(s, "frames=" + msg.size());
            return;
        }
        msg.pop(); // topic (the subscription filtered on it)
        byte[] seqBytes = msg.pop().getData();
        byte[] payload = msg.pop().getData();
        if (seqBytes.length != 8) {
            malformed(s, "seq_bytes=" + seqBytes.length);
            return;
        }
        if (payload.length > maxMessageSize) {
            malformed(s, "payload_bytes=" + payload.length + " max_message_size=" + maxMessageSize);
            return;
        }
        long seq = ByteBuffer.wrap(seqBytes).getLong();
        KvEventBatch batch;
        try {
            batch = KvEventDecoder.decode(payload);
        } catch (IllegalArgumentException e) {
            malformed(s, "seq=" + seq + " error=" + e.getMessage());
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
}
