package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.EventLoop;

/**
 * A server that prefills and decodes on its own: an FCFS {@link PrefillScheduler} (with the prefix
 * cache) feeding a {@link DecodeBatch}. The unified (non-PD) server is just that; the vLLM roles add
 * their handoff: a prefill leg that hands its KV over instead of decoding, a decode leg that fetches
 * its KV instead of prefilling. Requests waiting for a KV fetch count as queued.
 */
abstract class EngineServer extends SimWorker {
    final PrefillScheduler scheduler = new PrefillScheduler(this, this::prefilled);
    final DecodeBatch batch = new DecodeBatch(this);
    /** Items fetching their KV from a remote prefill (loop-confined). */
    int waitingKv;

    EngineServer(SimConfig cfg, int ordinal, EventLoop loop) {
        super(cfg, ordinal, loop);
    }

    /** The item's prompt has been computed here: by default it decodes here too. */
    void prefilled(SimItem item) {
        batch.add(item);
    }

    @Override
    void release(SimItem item) {
        switch (item.state) {
            case QUEUED, PREFILLING -> scheduler.remove(item);
            case DECODE_QUEUED, DECODING -> batch.remove(item);
            case WAITING_KV -> {
                waitingKv--;
                item.closeKvChannel();
            }
            default -> {
            }
        }
    }

    @Override
    int runningCount() {
        return scheduler.prefilling() + batch.running();
    }

    @Override
    int queuedCount() {
        return scheduler.queued() + batch.waiting() + waitingKv;
    }

    @Override
    long tokensHeldNow() {
        return scheduler.tokens() + batch.tokens();
    }

    /** Without disaggregation every waiting request is in the one waiting queue ({@code num_queue_reqs}). */
    @Override
    void classify(SimItem item, SimMetrics.RankLoad r) {
        switch (item.state) {
            case QUEUED -> {
                r.queue++;
                r.usedTokens += item.promptTokens;
            }
            case PREFILLING -> {
                r.running++;
                r.usedTokens += (long) Math.ceil(item.remainingPrefill);
            }
            case DECODING -> {
                r.running++;
                r.usedTokens += item.promptTokens + item.generated;
            }
            case DECODE_QUEUED, WAITING_KV -> r.queue++;
            default -> {
            }
        }
    }

    @Override
    void addServerInfo(ObjectNode info) {
        info.put("max_running_requests", cfg.decodeMaxBatch());
    }

    @Override
    void onWritable(Exchange ex) {
        batch.resume(ex);
    }

    /** Ending the killed items may have started a step timer for the batch: none outlives the kill. */
    @Override
    void killed() {
        batch.close();
    }
}
