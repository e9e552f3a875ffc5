package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A simulated SGLang server in {@code --disaggregation-mode prefill}: requests need a
 * {@code bootstrap_room}, wait in an unbounded FCFS queue, are prefilled at a token rate, and then
 * hold their KV until the decode peer fetches it from this server's {@link BootstrapServer} (or the
 * bootstrap timeout passes). The HTTP response is sent when the KV has been handed over. When
 * the decode peer of a room has gone (aborted, or its client disconnected) the transfer of that
 * room's KV fails as soon as it is computed: a KV transfer error, as on a real SGLang prefill. A
 * room chosen by {@code kvFailFraction} (here or on its decode) fails the same way at handoff:
 * this request ends with a KV transfer error (500), counted in {@code kvTransferFailures}, and so
 * does the decode's.
 */
public final class PrefillServer extends SimWorker {
    private static final Logger log = LoggerFactory.getLogger(PrefillServer.class);
    private final PrefillScheduler scheduler = new PrefillScheduler(this, this::prefillDone);
    private final BootstrapServer bootstrap = new BootstrapServer(this);
    private int kvHeld;
    private long kvHeldTokens;

    PrefillServer(SimConfig cfg, int ordinal, EventLoop loop) {
        super(cfg, ordinal, loop);
    }

    /** Port of this prefill's bootstrap server (SGLang's {@code --disaggregation-bootstrap-port}), also while killed. */
    public int bootstrapPort() {
        return bootstrap.port();
    }

    @Override
    public boolean isPrefill() {
        return true;
    }

    void bindBootstrap(EventLoopGroup group, int port) throws InterruptedException {
        bootstrap.bind(group, port);
    }

    BootstrapServer bootstrap() {
        return bootstrap;
    }

    /** The HTTP listener and the bootstrap listener: a kill stops both, a restart binds both again. */
    @Override
    List<Listener> listeners() {
        List<Listener> all = new ArrayList<>(super.listeners());
        all.addAll(bootstrap.listeners());
        return all;
    }

    @Override
    void killed() {
        bootstrap.forget();
    }

    /** A stalled item still has its room, so a decode long-polls it and an abort fails that decode at once. */
    @Override
    void stalled(SimItem item) {
        bootstrap.register(item);
    }

    @Override
    void admit(Exchange ex) {
        for (SimItem item : ex.items) {
            bootstrap.register(item);
            scheduler.enqueue(item);
        }
    }

    @Override
    void release(SimItem item) {
        switch (item.state) {
            case QUEUED, PREFILLING -> scheduler.remove(item);
            case KV_HELD -> {
                kvHeld--;
                kvHeldTokens -= item.promptTokens;
            }
            default -> {
            }
        }
        bootstrap.dropped(item, "request " + item.rid + " ended on the prefill before its KV was transferred");
    }

    /** The scheduler computed the item's prompt: its KV is ready for the decode. */
    void prefillDone(SimItem item) {
        item.state = SimItem.State.KV_HELD;
        kvHeld++;
        kvHeldTokens += item.promptTokens;
        metrics.observeTtft(item.exchange.secondsSinceReceived());
        outputProduced();
        if (BootstrapServer.FAKE_BOOTSTRAP_HOST.equals(item.bootstrapHost)) {
            // SGLang's fake transfer backend: FakeKVSender reports Success once sent, no decode involved
            // (sgl-project/sglang@0094505da74125a31ceb354f37ae7a1b6a97d3f5
            // python/sglang/srt/disaggregation/fake/conn.py FakeKVSender.poll)
            kvTransferred(item);
            return;
        }
        switch (bootstrap.kvReady(item)) {
            case DELIVERED -> {
            }
            case PEER_GONE -> transferFailed(item, "decode peer gone");
            case WAIT -> item.timer = loop.schedule(() -> bootstrapTimedOut(item), cfg.bootstrapTimeout().toNanos(),
                    TimeUnit.NANOSECONDS);
            default -> throw new IllegalStateException();
        }
    }

    /**
     * The KV is computed but cannot be sent (its decode has left, or {@code kvFailFraction} chose
     * the room): the request fails with a KV transfer error, the GPU work was for nobody.
     */
    void transferFailed(SimItem item, String reason) {
        if (item.state != SimItem.State.KV_HELD) {
            return;
        }
        kvTransferFailures.increment();
        // SGLang's prefill: process_disagg_prefill_inflight_queue, prepare_abort(..., status_code=500)
        // (sgl-project/sglang@0bd35246c01fd728e42c82bab2654c29cbd9a08f python/sglang/srt/disaggregation/prefill.py)
        String message = "Prefill transfer failed for request rank=0 req.rid='" + item.rid + "' req.bootstrap_room="
                + item.room + " with exception KVTransferError(bootstrap_room=" + item.room + "): " + reason;
        log.info("prefill {} kv transfer failed rid={} {}", ordinal, item.rid, message);
        endItem(item, Outcome.FAILED, null);
        item.exchange.fail(500, "InternalServerError", message);
    }

    /** The decode fetched the KV: the prefill half of the request is done. */
    void kvTransferred(SimItem item) {
        if (item.state != SimItem.State.KV_HELD) {
            return;
        }
        endItem(item, Outcome.COMPLETED, "length");
        item.exchange.itemEnded(item);
    }

    private void bootstrapTimedOut(SimItem item) {
        if (item.state != SimItem.State.KV_HELD) {
            return;
        }
        item.timer = null;
        bootstrapFailures.increment();
        log.info("prefill {} bootstrap timeout rid={} room={}", ordinal, item.rid, item.room);
        endItem(item, Outcome.FAILED, null);
        // SGLang's prefill: PrefillBootstrapQueue.pop_bootstrapped, prepare_abort(..., status_code=500)
        // (sgl-project/sglang@0bd35246c01fd728e42c82bab2654c29cbd9a08f python/sglang/srt/disaggregation/prefill.py)
        item.exchange.fail(500, "InternalServerError", "Prefill bootstrap failed for request rank=0 req.rid='"
                + item.rid + "' req.bootstrap_room=" + item.room + " with exception KVTransferError(bootstrap_room="
                + item.room + "): no decode fetched the KV within " + cfg.bootstrapTimeout().toMillis() + " ms");
    }

    @Override
    int runningCount() {
        return scheduler.prefilling() + kvHeld;
    }

    @Override
    int queuedCount() {
        return scheduler.queued();
    }

    @Override
    long tokensHeldNow() {
        return scheduler.tokens() + kvHeldTokens;
    }

    /**
     * A PD prefill's waiting requests are in its bootstrap/prealloc queue
     * ({@code num_prefill_prealloc_queue_reqs}), computed ones whose KV waits for the decode in its
     * inflight queue ({@code num_prefill_inflight_queue_reqs}), never in {@code num_queue_reqs}
     * (sgl-project/sglang python/sglang/srt/metrics/collector.py SchedulerStats, PD disaggregation fields).
     */
    @Override
    void classify(SimItem item, SimMetrics.RankLoad r) {
        switch (item.state) {
            case QUEUED -> {
                r.prefillPrealloc++;
                r.usedTokens += item.promptTokens;
            }
            case PREFILLING -> {
                r.running++;
                r.usedTokens += (long) Math.ceil(item.remainingPrefill);
            }
            case KV_HELD -> {
                r.prefillInflight++;
                r.usedTokens += item.promptTokens;
            }
            default -> {
            }
        }
    }

    @Override
    void addServerInfo(ObjectNode info) {
        info.put("disaggregation_bootstrap_port", bootstrapPort());
    }
}
