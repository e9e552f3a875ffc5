package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Faults one simulated server injects, changeable at any time from any thread (and over HTTP with
 * {@code POST /sim/faults}, same field names). All off by default; the token faults apply to
 * the servers that decode (decode, unified, and a vLLM prefill serving a plain request).
 * {@link #reset()} turns everything off again.
 */
public final class FaultKnobs {
    private volatile int failStatus;
    private volatile int stallAfterTokens = -1;
    private volatile int dropAfterTokens = -1;
    private volatile int failAfterTokens = -1;
    private volatile double slowFactor = 1.0;
    private volatile int healthStatus;
    private volatile boolean stallAll;
    private volatile int closeIdleAfterMs = -1;
    private volatile double kvFailFraction;
    private volatile double tokenUsage = -1;
    private volatile boolean eosAtFirstToken;
    private volatile boolean kvStall;

    /**
     * When > 0, every generation request (and {@code /health_generate}) is answered at once with
     * this status and a JSON error; it takes precedence over the stall knobs.
     */
    public int failStatus() {
        return failStatus;
    }

    public FaultKnobs setFailStatus(int status) {
        this.failStatus = status;
        return this;
    }

    /**
     * When >= 0, a decode stops emitting after this many tokens and keeps the connection open; its
     * {@code /health_generate} then never answers either.
     */
    public int stallAfterTokens() {
        return stallAfterTokens;
    }

    public FaultKnobs setStallAfterTokens(int tokens) {
        this.stallAfterTokens = tokens;
        return this;
    }

    /** When >= 0, a decode closes the connection abruptly after this many tokens. */
    public int dropAfterTokens() {
        return dropAfterTokens;
    }

    public FaultKnobs setDropAfterTokens(int tokens) {
        this.dropAfterTokens = tokens;
        return this;
    }

    /** When >= 0, a decode ends the request with an error after this many tokens. */
    public int failAfterTokens() {
        return failAfterTokens;
    }

    public FaultKnobs setFailAfterTokens(int tokens) {
        this.failAfterTokens = tokens;
        return this;
    }

    /** Multiplies prefill time and decode step time; 1.0 is normal speed. */
    public double slowFactor() {
        return slowFactor;
    }

    public FaultKnobs setSlowFactor(double factor) {
        if (!(factor > 0)) {
            throw new IllegalArgumentException("slowFactor: " + factor + " (expected: > 0)");
        }
        this.slowFactor = factor;
        return this;
    }

    /** When > 0, {@code GET /health} answers this status (empty body) instead of 200. */
    public int healthStatus() {
        return healthStatus;
    }

    public FaultKnobs setHealthStatus(int status) {
        if (status != 0 && (status < 100 || status > 599)) {
            throw new IllegalArgumentException("healthStatus: " + status + " (expected: 0 or 100..599)");
        }
        this.healthStatus = status;
        return this;
    }

    /**
     * When true, every generation request (prefill or decode) is accepted, journaled and counted
     * as running, and never answered: no token, no KV; only {@code /abort_request} or the client
     * closing the connection ends it (counted aborted). {@code /health_generate} never answers
     * either, while {@code /health} still does: a hung scheduler behind a live HTTP server.
     */
    public boolean stallAll() {
        return stallAll;
    }

    public FaultKnobs setStallAll(boolean stall) {
        this.stallAll = stall;
        return this;
    }

    /**
     * When >= 0, a keep-alive connection is closed once it has been idle this many milliseconds
     * after a complete response; 0 closes it right after the response is written, without a
     * {@code Connection: close} header (the keep-alive race a client's connection pool must
     * survive). -1: off.
     */
    public int closeIdleAfterMs() {
        return closeIdleAfterMs;
    }

    public FaultKnobs setCloseIdleAfterMs(int millis) {
        if (millis < -1) {
            throw new IllegalArgumentException("closeIdleAfterMs: " + millis + " (expected: >= -1)");
        }
        this.closeIdleAfterMs = millis;
        return this;
    }

    /**
     * The fraction (0..1) of rooms whose KV transfer fails, chosen from the room number alone (see
     * {@link #kvFails(long)}), so a run is reproducible. On a decode the fetch of such a room
     * asks the prefill to fail the transfer; on a prefill its bootstrap fails it. Either way both
     * halves fail at handoff time, once the prefill has computed the KV: the decode with
     * {@code KVTransferError(room=...)} and the prefill with its own KV transfer error, each counted
     * in {@code kvTransferFailures}, as SGLang reports a failed transfer on both sides. In vLLM mode
     * the choice is made from the hash of {@code remote_request_id} and the read from the prefill's
     * KV side channel fails the same way (the prefill frees the blocks; the decode answers
     * {@code kv_transfer_error}).
     */
    public double kvFailFraction() {
        return kvFailFraction;
    }

    public FaultKnobs setKvFailFraction(double fraction) {
        if (!(fraction >= 0 && fraction <= 1)) {
            throw new IllegalArgumentException("kvFailFraction: " + fraction + " (expected: 0..1)");
        }
        this.kvFailFraction = fraction;
        return this;
    }

    /** Whether the KV transfer of {@code room} fails under the current {@link #kvFailFraction()}. */
    public boolean kvFails(long room) {
        double fraction = kvFailFraction;
        if (fraction <= 0) {
            return false;
        }
        // mixed so that consecutive room numbers (as a router hands them out) do not fail in runs
        long h = room * 0x9E3779B97F4A7C15L;
        h ^= h >>> 32;
        return Math.floorMod(h, 10_000L) < fraction * 10_000;
    }

    /**
     * When >= 0, every data-parallel rank reports exactly this KV usage ratio
     * ({@code sglang:token_usage}, {@code vllm:kv_cache_usage_perc}, {@code token_usage} in the
     * load routes) instead of the computed one; -1: computed.
     */
    public double tokenUsage() {
        return tokenUsage;
    }

    public FaultKnobs setTokenUsage(double ratio) {
        if (!(ratio == -1 || (ratio >= 0 && ratio <= 1))) {
            throw new IllegalArgumentException("tokenUsage: " + ratio + " (expected: -1 or 0..1)");
        }
        this.tokenUsage = ratio;
        return this;
    }

    /**
     * vLLM prefill leg: the one token the prefill generates is EOS (or matches a stop string), so the
     * request finishes "stop" rather than length-capped; NixlConnector.request_finished then frees the
     * blocks at once and the answer carries {@code kv_transfer_params: null}.
     */
    public boolean eosAtFirstToken() {
        return eosAtFirstToken;
    }

    public FaultKnobs setEosAtFirstToken(boolean eos) {
        this.eosAtFirstToken = eos;
        return this;
    }

    /**
     * A silent KV stall on a decode: its KV transfer engine (or NIC) is stuck, so the KV of a request
     * with a real bootstrap room never arrives, while the server looks healthy. SGLang's
     * {@code /health} and {@code /health_generate} cannot see it: in PD mode their one-token request
     * names {@code bootstrap_host = FAKE_BOOTSTRAP_HOST} ("2.2.2.2") and {@code bootstrap_room = 0}
     * (sgl-project/sglang@0025436eab0556737d615b36a4dd3e1e26e82f3d
     * python/sglang/srt/entrypoints/http_server.py health_generate;
     * sgl-project/sglang@000eaffacf048e51b64d4d72985ef8f0b7054b39 python/sglang/srt/disaggregation/utils.py
     * FAKE_BOOTSTRAP_HOST), and that host selects the fake transfer backend, which completes at once
     * without touching the transfer engine (same utils.py get_kv_class; the prefill's
     * PrefillBootstrapQueue.add, sgl-project/sglang@000c2b942308ea5502978be73542016c230dba02
     * python/sglang/srt/disaggregation/prefill.py). So the checks keep answering 200 at their first poll.
     *
     * <p>Under the knob an SGLang decode accepts the request, sends its headers (a stream), completes
     * the handshake with the prefill (its long poll reaches the bootstrap server), and then nothing
     * arrives: no token; the item waits in the decode's transfer queue
     * ({@code num_decode_transfer_queue_reqs}, counted queued here) with its connection open. The
     * prefill computes the KV, starts the transfer and keeps the request in its inflight queue
     * ({@code num_prefill_inflight_queue_reqs}) without answering: its sender polls
     * {@code Transferring} and nothing but Success or Failed moves it on (prefill.py
     * process_disagg_prefill_inflight_queue at 000c2b94; MooncakeKVSender.poll applies only the
     * bootstrap timeout, sgl-project/sglang@0005973a84f7a02787e270b6be5970d3022d07fe
     * python/sglang/srt/disaggregation/mooncake/conn.py). What ends it: an abort or the client leaving
     * on the decode (the prefill's transfer then fails with a KV transfer error, 500: the decode's abort
     * notification marks an active room Failed, same conn.py MooncakeKVManager bootstrap_thread), an
     * abort on the prefill (its decode fails at once), or the
     * decode's {@code kvWait} passing: SGLang's decode gives up a room after
     * {@code SGLANG_DISAGGREGATION_WAITING_TIMEOUT} (default 300 s, the simulator's default
     * {@code kvWait}) in {@code KVPoll.WaitingForInput} (MooncakeKVReceiver.poll,
     * {@code _check_waiting_timeout}, same conn.py), a KV transfer error on both halves.
     *
     * <p>A request naming the fake bootstrap host itself is never stalled. It takes precedence over
     * {@link #kvFailFraction()} (a transfer that never ends cannot fail). On a vLLM decode the NIXL read
     * of the KV never completes the same way (the decode waits, {@code kvWait} bounds it, the prefill
     * frees the unread blocks after {@code vllmAbortTimeout}; whether vLLM itself bounds a stuck read on
     * the decode was not checked). No effect on a prefill or a unified server.
     */
    public boolean kvStall() {
        return kvStall;
    }

    public FaultKnobs setKvStall(boolean stall) {
        this.kvStall = stall;
        return this;
    }

    public FaultKnobs reset() {
        failStatus = 0;
        stallAfterTokens = -1;
        dropAfterTokens = -1;
        failAfterTokens = -1;
        slowFactor = 1.0;
        healthStatus = 0;
        stallAll = false;
        closeIdleAfterMs = -1;
        kvFailFraction = 0;
        tokenUsage = -1;
        eosAtFirstToken = false;
        kvStall = false;
        return this;
    }

    /**
     * Applies the fields present in {@code json}, after {@code "reset": true} if given; absent
     * fields keep their value. All or nothing: an invalid field changes no knob.
     */
    public void apply(JsonNode json) {
        FaultKnobs next = json.path("reset").asBoolean(false) ? new FaultKnobs() : copy();
        next.set(json);
        failStatus = next.failStatus;
        stallAfterTokens = next.stallAfterTokens;
        dropAfterTokens = next.dropAfterTokens;
        failAfterTokens = next.failAfterTokens;
        slowFactor = next.slowFactor;
        healthStatus = next.healthStatus;
        stallAll = next.stallAll;
        closeIdleAfterMs = next.closeIdleAfterMs;
        kvFailFraction = next.kvFailFraction;
        tokenUsage = next.tokenUsage;
        eosAtFirstToken = next.eosAtFirstToken;
        kvStall = next.kvStall;
    }

    private void set(JsonNode json) {
        if (json.has("failStatus")) {
            setFailStatus(json.get("failStatus").asInt());
        }
        if (json.has("stallAfterTokens")) {
            setStallAfterTokens(json.get("stallAfterTokens").asInt());
        }
        if (json.has("dropAfterTokens")) {
            setDropAfterTokens(json.get("dropAfterTokens").asInt());
        }
        if (json.has("failAfterTokens")) {
            setFailAfterTokens(json.get("failAfterTokens").asInt());
        }
        if (json.has("slowFactor")) {
            setSlowFactor(json.get("slowFactor").asDouble());
        }
        if (json.has("healthStatus")) {
            setHealthStatus(json.get("healthStatus").asInt());
        }
        if (json.has("stallAll")) {
            setStallAll(json.get("stallAll").asBoolean());
        }
        if (json.has("closeIdleAfterMs")) {
            setCloseIdleAfterMs(json.get("closeIdleAfterMs").asInt());
        }
        if (json.has("kvFailFraction")) {
            setKvFailFraction(json.get("kvFailFraction").asDouble());
        }
        if (json.has("tokenUsage")) {
            setTokenUsage(json.get("tokenUsage").asDouble());
        }
        if (json.has("eosAtFirstToken")) {
            setEosAtFirstToken(json.get("eosAtFirstToken").asBoolean());
        }
        if (json.has("kvStall")) {
            setKvStall(json.get("kvStall").asBoolean());
        }
    }

    private FaultKnobs copy() {
        FaultKnobs c = new FaultKnobs();
        c.set(toJson());
        return c;
    }

    public ObjectNode toJson() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("failStatus", failStatus);
        o.put("stallAfterTokens", stallAfterTokens);
        o.put("dropAfterTokens", dropAfterTokens);
        o.put("failAfterTokens", failAfterTokens);
        o.put("slowFactor", slowFactor);
        o.put("healthStatus", healthStatus);
        o.put("stallAll", stallAll);
        o.put("closeIdleAfterMs", closeIdleAfterMs);
        o.put("kvFailFraction", kvFailFraction);
        o.put("tokenUsage", tokenUsage);
        o.put("eosAtFirstToken", eosAtFirstToken);
        o.put("kvStall", kvStall);
        return o;
    }

    @Override
    public String toString() {
        return toJson().toString();
    }
}
