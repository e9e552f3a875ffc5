package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A simulated SGLang server in {@code --disaggregation-mode decode}: each item fetches the KV of
 * its room from the prefill named in its body (waiting up to {@code kvWait}, else a KV transfer
 * error), then joins the running batch and emits tokens. Streams get their 200 headers at once.
 * A room chosen by {@code kvFailFraction} asks its prefill to fail the handoff, and then fails
 * like any KV transfer error (after the prefill computed the KV, as a real transfer would).
 */
public final class DecodeServer extends SimWorker {
    private static final Logger log = LoggerFactory.getLogger(DecodeServer.class);
    private final DecodeBatch batch = new DecodeBatch(this);
    private int waitingKv;

    DecodeServer(SimConfig cfg, int ordinal, EventLoop loop) {
        super(cfg, ordinal, loop);
    }

    @Override
    public boolean isPrefill() {
        return false;
    }

    @Override
    void admit(Exchange ex) {
        for (SimItem item : ex.items) {
            item.state = SimItem.State.WAITING_KV;
            waitingKv++;
            item.timer = loop.schedule(() -> kvFailed(item, "no KV from " + item.bootstrapHost + ":"
                    + item.bootstrapPort + " within " + cfg.kvWait().toMillis() + " ms"),
                    cfg.kvWait().toNanos(), TimeUnit.NANOSECONDS);
            KvFetch.start(this, item);
        }
    }

    @Override
    void release(SimItem item) {
        switch (item.state) {
            case WAITING_KV -> {
                waitingKv--;
                closeKvChannel(item);
            }
            case DECODE_QUEUED, DECODING -> batch.remove(item);
            default -> {
            }
        }
    }

    private static void closeKvChannel(SimItem item) {
        Channel ch = item.kvChannel;
        item.kvChannel = null;
        if (ch != null) {
            ch.close();
        }
    }

    void kvArrived(SimItem item) {
        if (item.state != SimItem.State.WAITING_KV) {
            return;
        }
        waitingKv--;
        item.cancelTimer();
        closeKvChannel(item);
        batch.add(item);
        publishGauges();
    }

    /** The KV will not come: a KV transfer error ends the whole request (not for aborted items). */
    void kvFailed(SimItem item, String reason) {
        if (item.state != SimItem.State.WAITING_KV) {
            return;
        }
        kvTransferFailures.increment();
        String message = "KVTransferError(room=" + item.room + "): " + reason;
        log.info("decode {} kv transfer failed rid={} {}", ordinal, item.rid, message);
        endItem(item, Outcome.FAILED, null);
        item.exchange.fail(500, "InternalServerError", message);
    }

    /** One token for a running item; true when the item can go on at once. */
    boolean step(SimItem item) {
        Exchange ex = item.exchange;
        if (item.generated >= item.maxTokens) {
            finish(item);
            return false;
        }
        FaultKnobs f = faults;
        int g = item.generated;
        if (f.dropAfterTokens() >= 0 && g >= f.dropAfterTokens()) {
            if (!ex.dropped) {
                log.info("decode {} dropping the connection rid={} after {} tokens", ordinal, item.rid, g);
                ex.dropped = true;
                ex.channel.close();
            }
            return false;
        }
        if (f.failAfterTokens() >= 0 && g >= f.failAfterTokens()) {
            endItem(item, Outcome.FAILED, null);
            ex.fail(500, "InternalServerError", "simulated failure after " + g + " tokens");
            return false;
        }
        if (f.stallAfterTokens() >= 0 && g >= f.stallAfterTokens()) {
            return false;
        }
        if (ex.request.stream() && !ex.channel.isWritable()) {
            return false;
        }
        item.text.append(SimItem.token(g));
        item.generated++;
        metrics.tokenGenerated();
        if (g == 0) {
            metrics.observeTtft(ex.secondsSinceReceived());
            long now = System.nanoTime();
            item.firstTokenLate = item.departedAt(now);
            workStarting(item, now, true);
        }
        boolean last = item.generated >= item.maxTokens;
        if (last) {
            item.finishReason = "length";
        }
        if (ex.request.stream()) {
            ex.send(ex.format.tokenEvent(ex, item, last));
        }
        if (last) {
            finish(item);
            return false;
        }
        return true;
    }

    private void finish(SimItem item) {
        endItem(item, Outcome.COMPLETED, "length");
        item.exchange.itemEnded(item);
    }

    @Override
    void onWritable(Exchange ex) {
        batch.resume(ex);
    }

    @Override
    int runningCount() {
        return batch.running();
    }

    @Override
    int queuedCount() {
        return waitingKv + batch.waiting();
    }

    @Override
    long tokensHeldNow() {
        return batch.tokens();
    }

    @Override
    SimMetrics.Gauges gauges() {
        return new SimMetrics.Gauges(batch.running() + stalledItems, batch.waiting(), 0, 0, 0, waitingKv);
    }

    @Override
    void addServerInfo(ObjectNode info) {
        info.put("max_running_requests", cfg.decodeMaxBatch());
    }

    /** Ending the killed items may have started a step timer for the batch: none outlives the kill. */
    @Override
    void killed() {
        batch.close();
    }
}
