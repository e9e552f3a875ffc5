package dev.sluice.testbed.sim;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * SGLang's rule for a client that left, for one exchange ({@link AbortOnDisconnect#SGLANG}). Two
 * mechanisms in the real server decide when the scheduler hears of it:
 * <ul>
 *   <li>{@code TokenizerManager._wait_one_response} waits for the next output with
 *       {@code asyncio.wait_for(..., timeout=SGLANG_REQUEST_STATE_WAIT_TIMEOUT)} (4 s); each time it
 *       times out, and (non-streamed only) at each intermediate output, it asks
 *       {@code request.is_disconnected()} and aborts at once when the client is gone. A non-streamed
 *       request gets intermediate outputs every {@code DEFAULT_FORCE_STREAM_INTERVAL} (50) tokens.</li>
 *   <li>Once a stream's {@code StreamingResponse} is running, Starlette notices the disconnect at once,
 *       cancels the stream and runs the response's background task, {@code create_abort_task}, which
 *       sleeps 2 s and then aborts the rid. {@code /generate} returns its StreamingResponse at once; the
 *       OpenAI routes kick-start their generator first, so before their first output they are in the
 *       first case.</li>
 * </ul>
 * Confined to the server's event loop.
 */
final class DisconnectWatch {
    static final long WAIT_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(4);
    static final long BACKGROUND_ABORT_NANOS = TimeUnit.SECONDS.toNanos(2);
    static final int FORCE_STREAM_INTERVAL = 50;

    private final Exchange ex;
    /** When {@code _wait_one_response} last woke with an output (its 4 s timer restarts then). */
    private long lastOutputNanos;
    private boolean streamStarted;
    private boolean clientGone;
    private ScheduledFuture<?> abort;

    DisconnectWatch(Exchange ex) {
        this.ex = ex;
        this.lastOutputNanos = ex.receivedNanos;
        this.streamStarted = ex.request.stream() && ex.request.route() == Route.GENERATE;
    }

    /** An item produced its {@code generated}-th token (decode step). */
    void tokenProduced(int generated) {
        boolean output = ex.request.stream() || generated % FORCE_STREAM_INTERVAL == 0;
        if (!output) {
            return;
        }
        lastOutputNanos = System.nanoTime();
        if (ex.request.stream()) {
            if (!streamStarted) {
                streamStarted = true;
                if (clientGone) { // the StreamingResponse starts now and sees the disconnect at once
                    schedule(BACKGROUND_ABORT_NANOS);
                }
            }
        } else if (clientGone) {
            abortNow(); // "type 3": a non-streamed request checks at each intermediate output
        }
    }

    /** The connection closed. */
    void clientLeft() {
        if (clientGone) {
            return;
        }
        clientGone = true;
        if (ex.request.stream() && streamStarted) {
            schedule(BACKGROUND_ABORT_NANOS);
        } else {
            long now = System.nanoTime();
            long since = now - lastOutputNanos;
            long ticks = Math.max(1, (since + WAIT_TIMEOUT_NANOS - 1) / WAIT_TIMEOUT_NANOS);
            schedule(lastOutputNanos + ticks * WAIT_TIMEOUT_NANOS - now);
        }
    }

    /** The exchange ended (answered, failed or aborted): nothing more to do. */
    void cancel() {
        if (abort != null) {
            abort.cancel(false);
            abort = null;
        }
    }

    private void schedule(long delayNanos) {
        cancel();
        abort = ex.worker.loop.schedule(this::abortNow, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
    }

    private void abortNow() {
        abort = null;
        ex.abortForDepartedClient();
    }
}
