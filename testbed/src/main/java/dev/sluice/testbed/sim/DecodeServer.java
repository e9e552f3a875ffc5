package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.EventLoop;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A simulated SGLang server in {@code --disaggregation-mode decode}: each item fetches the KV of
 * its room from the prefill named in its body (waiting up to {@code kvWait}, else a KV transfer
 * error), then joins the running batch and emits tokens. Streams get their 200 headers at once.
 * A room chosen by {@code kvFailFraction} asks its prefill to fail the handoff, and then fails
 * like any KV transfer error (after the prefill computed the KV, as a real transfer would). Under
 * {@code kvStall} the fetch asks its prefill to start a transfer that never ends. A request naming
 * SGLang's fake bootstrap host (its health check's) gets its "KV" at once, from no prefill.
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
            fetchKv(item);
        }
    }

    private void fetchKv(SimItem item) {
        if (BootstrapServer.FAKE_BOOTSTRAP_HOST.equals(item.bootstrapHost)) {
            // SGLang's fake transfer backend (health checks, warmups): the receiver reports Success at
            // once, without the prefill or the transfer engine, so kvStall cannot touch it
            // (sgl-project/sglang@0094505da74125a31ceb354f37ae7a1b6a97d3f5
            // python/sglang/srt/disaggregation/fake/conn.py FakeKVReceiver.poll)
            loop.execute(() -> kvArrived(item));
            return;
        }
        if (item.bootstrapHost == null || item.bootstrapHost.isBlank()) {
            loop.execute(() -> kvFailed(item, "the request names no bootstrap_host"));
            return;
        }
        String uri = "/kv/" + item.room + "?rid=" + URLEncoder.encode(item.rid, StandardCharsets.UTF_8)
                + (item.sample == 0 ? "" : "&" + BootstrapServer.SAMPLE_PARAM + "=" + item.sample)
                + (item.prefillDpRank < 0 ? "" : "&" + BootstrapServer.RANK_PARAM + "=" + item.prefillDpRank);
        if (faults.kvStall()) {
            // the handshake completes, the transfer itself never does (FaultKnobs.kvStall)
            uri += "&" + BootstrapServer.STALL_PARAM + "=true";
            log.info("decode {} kv transfer stalled rid={} room={}", ordinal, item.rid, item.room);
        } else if (faults.kvFails(item.room)) {
            uri += "&" + BootstrapServer.FAIL_PARAM + "=true"; // the handoff fails on both sides
        }
        KvFetch.start(this, item, item.bootstrapHost, item.bootstrapPort, uri, KvFetch.Peer.BOOTSTRAP,
                new KvFetch.Receiver() {
                    @Override
                    public void arrived(SimItem i, JsonNode answer) {
                        kvArrived(i);
                    }

                    @Override
                    public void failed(SimItem i, String reason) {
                        kvFailed(i, reason);
                    }
                });
    }

    @Override
    void release(SimItem item) {
        switch (item.state) {
            case WAITING_KV -> {
                waitingKv--;
                item.closeKvChannel();
            }
            case DECODE_QUEUED, DECODING -> batch.remove(item);
            default -> {
            }
        }
    }

    void kvArrived(SimItem item) {
        if (item.state != SimItem.State.WAITING_KV) {
            return;
        }
        waitingKv--;
        item.cancelTimer();
        item.closeKvChannel();
        batch.add(item);
        publishGauges();
    }

    /** The KV will not come: a KV transfer error ends the whole request (not for aborted items). */
    void kvFailed(SimItem item, String reason) {
        if (item.state != SimItem.State.WAITING_KV) {
            return;
        }
        kvTransferFailures.increment();
        // SGLang's decode: DecodeTransferQueue.pop_transferred, prepare_abort(..., status_code=500)
        // (sgl-project/sglang@278e503a5e16252fb4ff513018b6a73e30976f63 python/sglang/srt/disaggregation/decode.py)
        String message = "Decode transfer failed for request rank=0 decode_req.req.rid='" + item.rid
                + "' decode_req.req.bootstrap_room=" + item.room + " with exception KVTransferError(bootstrap_room="
                + item.room + "): " + reason;
        log.info("decode {} kv transfer failed rid={} {}", ordinal, item.rid, message);
        endItem(item, Outcome.FAILED, null);
        item.exchange.fail(500, "InternalServerError", message);
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

    /**
     * A PD decode's request waits for its KV in the transfer queue ({@code num_decode_transfer_queue_reqs};
     * the simulator pre-allocates at once, so its prealloc queue stays empty), then, KV transferred, in the
     * rank's waiting queue ({@code num_queue_reqs}) until its rank's running batch has room: the decode's life
     * cycle PreallocQueue, TransferQueue, WaitingQueue, RunningBatch, {@code process_decode_queue} moving
     * transferred requests into {@code waiting_queue} (sgl-project/sglang@278e503a5e16252fb4ff513018b6a73e30976f63
     * python/sglang/srt/disaggregation/decode.py; gauges: python/sglang/srt/metrics/collector.py SchedulerStats).
     */
    @Override
    void classify(SimItem item, SimMetrics.RankLoad r) {
        switch (item.state) {
            case WAITING_KV -> r.decodeTransfer++;
            case DECODE_QUEUED -> r.queue++;
            case DECODING -> {
                r.running++;
                r.usedTokens += item.promptTokens + item.generated;
            }
            default -> {
            }
        }
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
