package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.health.HealthTable;
import dev.sluice.gateway.health.ProbeOutcome;
import dev.sluice.gateway.health.StallProbes;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One probe of a pair suspect of a silent stall: the gateway's own small generation (its own rid,
 * {@link RequestIds#probe}) sent through both halves by the configured protocol's driver, exactly
 * as a client's attempt goes (SGLang bootstrap rooms, vLLM {@code kv_transfer_params}, or one
 * unified worker), with nobody to answer: the {@link ProbeSink} keeps only the status. It is no
 * client's request: no admission ticket, no retry, no request metrics, no health report but its
 * verdict. A whole 200 answer is a success; an error is a failure; no answer within the timeout
 * stops both halves (aborts, as for a client) and is a timeout. Event-loop confined.
 */
final class PairProbe extends GatewayOwnRequest {
    private static final Logger log = LoggerFactory.getLogger(PairProbe.class);

    private final ProbeSink sink = new ProbeSink();
    private final EventLoop loop;
    private final StallProbes.Verdict verdict;
    private final Attempt attempt;
    private final long startNanos = System.nanoTime();
    private ScheduledFuture<?> timer;
    private boolean judged;
    private boolean firstToken;

    PairProbe(Drivers drivers, AttemptServices services, EventLoop loop, ByteBufAllocator alloc,
              GenerationRequest request, HealthTable.ProbePair pair, StallProbes.Verdict verdict) {
        this.loop = loop;
        this.verdict = verdict;
        RequestScope scope = new RequestScope(request, loop, alloc, sink, services, this);
        this.attempt = drivers.newAttempt(scope, new AttemptKey(RequestIds.probe(), pair.prefill(), pair.decode()));
    }

    /** Sends both halves; the verdict comes by {@code timeout} at the latest. */
    void start(Duration timeout) {
        timer = loop.schedule(this::timedOut, timeout.toNanos(), TimeUnit.NANOSECONDS);
        if (!attempt.send()) {
            attempt.giveUp();
            judge(ProbeOutcome.FAILED, "the probe's worker request could not be built");
        }
    }

    String rid() {
        return attempt.rid;
    }

    private void timedOut() {
        if (!judged) {
            judge(ProbeOutcome.TIMEOUT, "no answer within health.stall_panic.probe_timeout=" + (System.nanoTime()
                    - startNanos) / 1_000_000 + " ms (" + (attempt.prefillDone() ? "the prefill finished: the decode "
                    + "stalled" : "the prefill did not finish") + ")");
            stop(AbortCause.STALL_PROBE);
        }
    }

    private void judge(ProbeOutcome outcome, String detail) {
        judged = true;
        if (timer != null) {
            timer.cancel(false);
        }
        log.info("stall probe ended rid={} prefill={} decode={} result={} duration_ms={} detail=\"{}\"", attempt.rid,
                attempt.prefill.name(), attempt.decode.name(), outcome.label(),
                (System.nanoTime() - startNanos) / 1_000_000, detail);
        verdict.ended(outcome, detail);
    }

    private void stop(AbortCause cause) {
        if (!attempt.givenUp()) {
            attempt.giveUp();
            attempt.stop(cause);
        }
        sink.abandon();
    }

    // ---- what the attempt reports ----

    @Override
    public void prefillSucceeded(AttemptKey a) {
    }

    @Override
    public void firstToken(AttemptKey a) {
        firstToken = true;
    }

    @Override
    public void responseEnded(AttemptKey a, boolean clean) {
        if (judged) {
            return;
        }
        if (clean && sink.status() == 200) {
            judge(ProbeOutcome.SUCCESS, "answered 200");
        } else {
            judge(ProbeOutcome.FAILED, "answered status " + sink.status() + (clean ? "" : " with an error in it"));
        }
    }

    @Override
    public void failed(AttemptKey a, AttemptFailure f) {
        if (!judged) {
            judge(ProbeOutcome.FAILED, f.error().message());
        }
        stop(AbortCause.PEER_FAILED);
    }

    @Override
    public void internalError(AttemptKey a, Throwable error) {
        RequestLog.internalError(attempt.scope.services().metrics(), attempt.rid, a, error);
        if (!judged) {
            judge(ProbeOutcome.FAILED, "the gateway failed while handling the probe (an internal error, logged)");
        }
        stop(AbortCause.INTERNAL_ERROR);
    }

    @Override
    public boolean wantsPromptTokens() {
        return false;
    }

    @Override
    public void promptTokens(long tokens) {
    }

    @Override
    public boolean pastFirstToken(AttemptKey a) {
        return firstToken;
    }
}
