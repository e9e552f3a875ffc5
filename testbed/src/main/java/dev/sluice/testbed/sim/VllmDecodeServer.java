package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import io.netty.channel.EventLoop;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A simulated vLLM decode instance (NixlConnector). A request whose {@code kv_transfer_params} are
 * those a prefill answered ({@code do_remote_prefill: true} and the {@code remote_*} fields) reads
 * its KV blocks from that prefill's side channel (real HTTP, up to {@code kvWait}), checks the
 * engine and block ids, and then decodes in the batch and answers like any decode (streams get
 * their headers at once). A failed read fails the request: 500, or an error event in a stream,
 * saying {@code kv_transfer_error}, counted in {@code kvTransferFailures}. Malformed params (the
 * prefill leg's own, lost fields) are refused with 400. A request without {@code kv_transfer_params}
 * is prefilled here first, the slow path vLLM takes when a proxy drops them (vllm PR #42703):
 * counted in {@code recomputedPrefills}.
 */
public final class VllmDecodeServer extends VllmServer {
    private static final Logger log = LoggerFactory.getLogger(VllmDecodeServer.class);

    VllmDecodeServer(SimConfig cfg, int ordinal, EventLoop loop) {
        super(cfg, ordinal, loop);
    }

    @Override
    public boolean isPrefill() {
        return false;
    }

    @Override
    void validate(GenerationRequest request) throws GenerationRequest.BadRequest {
        super.validate(request);
        KvTransferParams kv = request.kvTransferParams();
        if (kv != null && request.items().size() != 1) {
            throw new GenerationRequest.BadRequest("kv_transfer_params with " + request.items().size()
                    + " requests in one body (expected: one prompt, n = 1)");
        }
        String problem = kv == null ? null : kv.decodeLegProblem();
        if (problem != null) {
            throw new GenerationRequest.BadRequest(problem);
        }
    }

    @Override
    void admit(Exchange ex) {
        super.admit(ex);
        KvTransferParams kv = ex.request.kvTransferParams();
        for (SimItem item : ex.items) {
            if (kv == null) {
                recomputedPrefills.increment();
                log.info("decode {} prefilling locally rid={}: no kv_transfer_params", ordinal, item.rid);
                scheduler.enqueue(item);
                continue;
            }
            item.state = SimItem.State.WAITING_KV;
            waitingKv++;
            item.timer = loop.schedule(() -> kvFailed(item, kv, "no KV from " + kv.remoteHost() + ":"
                    + kv.remotePort() + " within " + cfg.kvWait().toMillis() + " ms"),
                    cfg.kvWait().toNanos(), TimeUnit.NANOSECONDS);
            if (faults.kvStall()) {
                // the NIXL read is posted and never completes (FaultKnobs.kvStall): only kvWait, an
                // abort or the client leaving end the item; the prefill frees the unread blocks itself
                log.info("decode {} kv read stalled rid={}", ordinal, item.rid);
                continue;
            }
            fetch(item, kv);
        }
    }

    private void fetch(SimItem item, KvTransferParams kv) {
        String uri = "/kv/" + URLEncoder.encode(kv.remoteRequestId(), StandardCharsets.UTF_8) + "?engine_id="
                + URLEncoder.encode(kv.remoteEngineId(), StandardCharsets.UTF_8);
        if (faults.kvFails(kv.remoteRequestId().hashCode())) {
            uri += "&" + BootstrapServer.FAIL_PARAM + "=true"; // the read fails on both sides
        }
        KvFetch.start(this, item, kv.remoteHost(), kv.remotePort(), uri, KvFetch.Peer.SIDE_CHANNEL,
                new KvFetch.Receiver() {
                    @Override
                    public void arrived(SimItem i, JsonNode answer) {
                        kvArrived(i, kv, answer);
                    }

                    @Override
                    public void failed(SimItem i, String reason) {
                        kvFailed(i, kv, reason);
                    }
                });
    }

    private void kvArrived(SimItem item, KvTransferParams kv, JsonNode answer) {
        if (item.state != SimItem.State.WAITING_KV) {
            return;
        }
        List<Integer> read = new ArrayList<>();
        if (answer != null) {
            answer.path("block_ids").forEach(b -> read.add(b.asInt()));
        }
        if (!read.equals(kv.remoteBlockIds())) {
            kvFailed(item, kv, "remote_block_ids " + kv.remoteBlockIds() + " are not the blocks the prefill held "
                    + read);
            return;
        }
        waitingKv--;
        item.cancelTimer();
        item.closeKvChannel();
        batch.add(item);
        publishGauges();
    }

    /**
     * A decode leg that ends before it read its KV (its client left while it waited, or it was never
     * scheduled) tells the prefill to free the blocks instead of leaving them held until
     * {@code VLLM_NIXL_ABORT_REQUEST_TIMEOUT} (vllm-project/vllm@0f120751344c09af442c1800020908d2b7ff71f2
     * vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py NixlConnectorScheduler.request_finished,
     * the {@code do_remote_prefill} branch): a notification to the prefill's side channel.
     */
    @Override
    void release(SimItem item) {
        SimItem.State was = item.state;
        super.release(item);
        KvTransferParams kv = item.exchange.request.kvTransferParams();
        if (kv != null && (was == SimItem.State.WAITING_KV || was == SimItem.State.STALLED
                || was == SimItem.State.NEW)) {
            String uri = "/free/" + URLEncoder.encode(kv.remoteRequestId(), StandardCharsets.UTF_8) + "?engine_id="
                    + URLEncoder.encode(kv.remoteEngineId(), StandardCharsets.UTF_8);
            KvFetch.start(this, item, kv.remoteHost(), kv.remotePort(), uri, KvFetch.Peer.SIDE_CHANNEL,
                    new KvFetch.Receiver() {
                        @Override
                        public void arrived(SimItem i, JsonNode answer) {
                        }

                        @Override
                        public void failed(SimItem i, String reason) {
                        }
                    });
        }
    }

    /** The KV will not come: the request fails with vLLM's KV transfer error. */
    private void kvFailed(SimItem item, KvTransferParams kv, String reason) {
        if (item.state != SimItem.State.WAITING_KV) {
            return;
        }
        kvTransferFailures.increment();
        String message = "kv_transfer_error: KV transfer failed for request " + item.rid + " (remote_request_id="
                + kv.remoteRequestId() + "): " + reason;
        log.info("decode {} kv transfer failed rid={} {}", ordinal, item.rid, message);
        endItem(item, Outcome.FAILED, null);
        item.exchange.fail(500, "InternalServerError", message);
    }
}
