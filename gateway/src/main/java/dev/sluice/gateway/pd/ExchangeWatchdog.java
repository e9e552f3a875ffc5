package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.health.FailureKind;
import dev.sluice.gateway.routing.Worker;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * One request's deadline timer and what a passed deadline means: a stall before the first token is
 * the stall watchdog's (it counts against the worker that stalled and may be retried elsewhere);
 * a client deadline answers the client. One timer at a time, re-armed for the next deadline of the
 * {@link ExchangeTimeline}. On the request's event loop.
 */
final class ExchangeWatchdog {
    /** What the watchdog reads of its request and what it may do to it (the exchange). */
    interface Guarded {
        boolean ended();

        /** The decode is held because the client stopped reading. */
        boolean clientBackpressured();

        /** The attempt that speaks for the request now, or null. */
        Attempt attempt();

        void failed(AttemptKey a, AttemptFailure f);

        void fail(ApiError error, AbortCause cause);

        void internalError(AttemptKey a, Throwable error);
    }

    private final Guarded ex;
    private final ExchangeTimeline timeline;
    private final ClientSink client;
    private final HealthReports health;
    private final EventLoop loop;
    private final Duration idleStream;
    /** Its stream, with no first token, may wait in its decode for a slot (the rank's started streams fill its cap). */
    private final BooleanSupplier decodeMayWait;
    private ScheduledFuture<?> timer;

    ExchangeWatchdog(Guarded ex, ExchangeTimeline timeline, ClientSink client, HealthReports health, EventLoop loop,
                     Duration idleStream, BooleanSupplier decodeMayWait) {
        this.ex = ex;
        this.timeline = timeline;
        this.client = client;
        this.health = health;
        this.loop = loop;
        this.idleStream = idleStream;
        this.decodeMayWait = decodeMayWait;
    }

    /** (Re)arms the timer for the timeline's next deadline. */
    void arm() {
        cancel();
        long delay = Math.max(1, timeline.nextDeadline(client.ended()) - System.nanoTime());
        timer = loop.schedule(this::check, delay, TimeUnit.NANOSECONDS);
    }

    void cancel() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }

    private void check() {
        if (ex.ended()) {
            return;
        }
        ExchangeTimeline.Expiry expiry = timeline.expired(System.nanoTime(), client.ended());
        if (expiry != null) {
            try {
                expired(expiry);
            } catch (RuntimeException e) {
                Attempt a = ex.attempt();
                ex.internalError(a == null ? null : a.key, e);
            }
        }
        if (!ex.ended()) {
            arm();
        }
    }

    /**
     * A deadline passed. When a prefill is late, its decode may be the one stuck (it never took the
     * KV), so both get an immediate active check; the one that fails it is ejected.
     */
    private void expired(ExchangeTimeline.Expiry e) {
        Attempt a = ex.attempt();
        if (a == null || a.givenUp()) {
            ex.fail(e.error(), null);
            return;
        }
        switch (e.kind()) {
            case PREFILL_STALL -> {
                health.stalled(a.prefill, e.error().message());
                if (a.decode != a.prefill) {
                    health.stalled(a.decode, e.error().message());
                }
                // a unified worker is both: then there is no doubt whose stall it is
                ex.failed(a.key, AttemptFailure.stall(e.error(), a.prefill == a.decode ? a.decode : null));
            }
            case DECODE_STALL -> {
                if (decodeMayWait.getAsBoolean()) {
                    // the decode's lookahead is whichever stream's KV landed last, not the last dispatched:
                    // this one may wait for a slot (the client's first_token deadline still holds)
                    timeline.decodeMayWait(System.nanoTime());
                    return;
                }
                health.stalled(a.decode, e.error().message()); // confirms it even when it is the last decode
                ex.failed(a.key, AttemptFailure.stall(e.error(), a.decode));
            }
            case IDLE_STREAM -> {
                if (ex.clientBackpressured()) {
                    // the decode was held by backpressure: the client read nothing for idle_stream; its
                    // own doing, never a worker stall (it would eject healthy workers behind slow readers)
                    ex.fail(ApiError.timeout("the client read nothing of the stream for timeouts.idle_stream="
                            + idleStream.toMillis() + " ms"), AbortCause.SLOW_CLIENT);
                    return;
                }
                health.failed(AttemptFailure.deadline(e.error(), a.decode, FailureKind.STALL));
                ex.fail(e.error(), e.abortCause());
            }
            default -> {
                Worker late = timeline.prefillSeenDone() ? a.decode : a.prefill;
                health.failed(AttemptFailure.deadline(e.error(), late, FailureKind.TIMEOUT));
                ex.fail(e.error(), e.abortCause());
            }
        }
    }
}
