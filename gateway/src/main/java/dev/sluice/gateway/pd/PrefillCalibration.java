package dev.sluice.gateway.pd;

import dev.sluice.gateway.admission.PrefillCalibrationTarget;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.routing.Worker;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One prefill worker's calibration: three of the gateway's own requests in sequence, each waiting for the
 * one before, so that the worker computes one prompt at a time.
 * <ol>
 * <li>a warm-up of a quarter of {@code prompt_tokens}, not timed: it takes the cold start (the first
 * connection, the first bootstrap handshake, the worker's first batch), which took the first prefill of
 * bench-overload from 4.4 s to 7.1 s on a loaded machine ({@code PrefillThroughput});</li>
 * <li>a short prompt of a quarter of {@code prompt_tokens}, timed;</li>
 * <li>a long prompt of {@code prompt_tokens}, timed.</li>
 * </ol>
 * The rate is the slope between the two sizes, {@code (n2 - n1) / (t2 - t1)}: the fixed cost of a request
 * (the HTTP hops, the handshake, the one decode step) is in both times and cancels, which is what a burst
 * measures too (its prefills' overheads overlap). Never below {@code n2 / t2}: the slope falls under that
 * only when noise slowed the short prompt, and a rate biased low would refuse requests that could be
 * served. Client prompts in prefill on the worker before or after a timed request spoil it: the
 * calibration is then given up (client traffic measures the worker anyway). Event-loop confined.
 */
final class PrefillCalibration {
    private static final Logger log = LoggerFactory.getLogger(PrefillCalibration.class);

    /** How a calibration ended, for the orchestrator. */
    enum Outcome { CALIBRATED, FAILED }

    private final Worker prefill;
    private final Worker decode;
    private final EventLoop loop;
    private final PrefillCalibrationTarget target;
    private final Function<String, GenerationRequest> requests; // the built request for a prompt, or null
    private final Sender sender;
    private final CalibrationPrompts prompts;
    private final long promptTokens;
    private final double bytesPerToken;
    private final Consumer<Outcome> ended;
    private final long startNanos = System.nanoTime();
    private ScheduledFuture<?> timer;
    private CalibrationRequest current;
    private boolean over;
    private int step; // 0 warm-up, 1 short, 2 long
    private long shortTokens;
    private long shortNanos;

    /** Sends one request through the pair (the protocol's driver, the shared connections). */
    interface Sender {
        CalibrationRequest send(GenerationRequest request, Worker prefill, Worker decode, CalibrationRequest.Done done);
    }

    PrefillCalibration(Worker prefill, Worker decode, EventLoop loop, PrefillCalibrationTarget target,
                       Function<String, GenerationRequest> requests, Sender sender, CalibrationPrompts prompts,
                       long promptTokens, double bytesPerToken, Consumer<Outcome> ended) {
        this.prefill = prefill;
        this.decode = decode;
        this.loop = loop;
        this.target = target;
        this.requests = requests;
        this.sender = sender;
        this.prompts = prompts;
        this.promptTokens = promptTokens;
        this.bytesPerToken = bytesPerToken;
        this.ended = ended;
    }

    /** Starts the sequence; it ends by {@code timeout} at the latest. */
    void start(Duration timeout) {
        timer = loop.schedule(() -> fail("no result within admission.prefill_rate.calibration.timeout="
                + timeout.toMillis() + " ms (step " + step + " of 3 " + (current == null ? "" : "rid=" + current.rid())
                + ")"), timeout.toNanos(), TimeUnit.NANOSECONDS);
        next();
    }

    /** The gateway closes: the request in flight is stopped, nothing is logged as a result. */
    void close() {
        over = true;
        if (timer != null) {
            timer.cancel(false);
        }
        if (current != null) {
            current.stop();
        }
    }

    private void next() {
        if (over) {
            return;
        }
        if (step > 0 && target.busy(prefill)) {
            fail("client prompts reached the worker during the calibration (its rate is measured on them instead)");
            return;
        }
        long tokens = step == 2 ? promptTokens : promptTokens / 4;
        GenerationRequest request = requests.apply(prompts.text(tokens, bytesPerToken));
        if (request == null) {
            fail("the calibration's request was refused by the gateway's own parser");
            return;
        }
        long estimate = tokens;
        current = sender.send(request, prefill, decode, new CalibrationRequest.Done() {
            @Override
            public void answered(long reported, long prefillNanos) {
                answer(reported > 0 ? reported : estimate, prefillNanos);
            }

            @Override
            public void failed(String why) {
                fail(why);
            }
        });
    }

    private void answer(long tokens, long nanos) {
        if (over) {
            return;
        }
        if (step > 0 && target.busy(prefill)) {
            fail("client prompts reached the worker during the calibration (its rate is measured on them instead)");
            return;
        }
        if (step == 0) {
            step = 1;
            next();
        } else if (step == 1) {
            shortTokens = tokens;
            shortNanos = nanos;
            step = 2;
            next();
        } else {
            double rate = rate(shortTokens, shortNanos / 1e9, tokens, nanos / 1e9);
            if (Double.isNaN(rate)) {
                fail("inconsistent timings: " + shortTokens + " tokens in " + shortNanos / 1_000_000 + " ms, "
                        + tokens + " in " + nanos / 1_000_000 + " ms");
                return;
            }
            finish();
            target.calibrated(prefill, rate);
            log.info("prefill rate calibrated worker={} decode={} tokens_per_second={} short_tokens={} short_ms={} "
                    + "long_tokens={} long_ms={} duration_ms={}", prefill.name(), decode.name(), Math.round(rate),
                    shortTokens, shortNanos / 1_000_000, tokens, nanos / 1_000_000, elapsedMs());
            ended.accept(Outcome.CALIBRATED);
        }
    }

    /**
     * The rate from a short and a long prompt's prefill times: the slope, never below the long prompt's own
     * rate; NaN when the timings contradict each other (the long prompt not the longer, or not the slower).
     */
    static double rate(long shortTokens, double shortSeconds, long longTokens, double longSeconds) {
        if (!(shortSeconds > 0) || !(longSeconds > shortSeconds) || longTokens <= shortTokens) {
            return Double.NaN;
        }
        double slope = (longTokens - shortTokens) / (longSeconds - shortSeconds);
        return Math.max(slope, longTokens / longSeconds);
    }

    private void fail(String why) {
        if (over) {
            return;
        }
        finish();
        if (current != null) {
            current.stop();
        }
        log.warn("prefill rate calibration failed worker={} decode={} duration_ms={} reason=\"{}\" rate={} (learnt "
                + "from client prefills, as without calibration)", prefill.name(), decode.name(), elapsedMs(), why,
                target.rateOf(prefill));
        ended.accept(Outcome.FAILED);
    }

    private void finish() {
        over = true;
        if (timer != null) {
            timer.cancel(false);
        }
    }

    private long elapsedMs() {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }
}
