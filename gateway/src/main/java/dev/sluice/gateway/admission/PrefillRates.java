package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig.PrefillRateConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerTelemetry;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Each prefill worker's rate (prompt tokens per second of busy time) and the work it still has in
 * prefill: the two numbers every prediction of a first token is made of.
 *
 * <p>A worker's rate is, in order: what the gateway measured on it (busy time only, exponentially
 * weighted, {@link PrefillThroughput}); else a trusted <em>prior</em>: configured for it
 * ({@code admission.prefill_rate}), read from its own counters ({@code from_telemetry}), measured by
 * the gateway's own requests when the worker joined ({@code calibration}), or carried over from the
 * previous run ({@code state_file}); else the untrusted guess
 * {@code initial_prefill_tokens_per_second}. Predictions (the deadline checks) are on only while
 * every available prefill worker has a measured rate or a prior: a guess is good enough for a
 * Retry-After, not for refusing a request.
 *
 * <p>The work still in prefill is not what was dispatched: since a worker's last completion (or the
 * start of its busy period) it has been computing at its rate, so a request 4 s into a 4.4 s prefill
 * has 0.4 s left, not 4.4 s. Guarded by the admission lock.
 */
final class PrefillRates {
    /** Where a worker's rate comes from. */
    enum Source {
        MEASURED, CONFIGURED, TELEMETRY, CALIBRATED, STATE_FILE, GUESS;

        String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private static final double HORIZON_SECONDS = 10.0;
    /**
     * A request sent to a worker this recently may not have reached its queue yet: one sent after it
     * can still overtake it (two HTTP requests, and in PD mode two bootstrap handshakes, race).
     */
    static final long OVERTAKE_WINDOW_NANOS = 1_000_000_000L;

    private final WorkerSet workers;
    private PrefillRateConfig config;
    private double guess;
    private Map<String, Double> saved; // from the state file, by worker URL
    private final Map<Worker, WorkerRate> rates = new HashMap<>();

    /** One worker's estimate and its work in prefill. */
    private static final class WorkerRate {
        // the measured estimate starts from the guess, but says measured() only once it has a real sample
        final PrefillThroughput measured;
        long inPrefillTokens;
        long lastProgressNanos;
        long periodStartNanos; // the start of the current busy period
        long periodTokens; // prompt tokens dispatched to it in the current busy period
        double calibrated = Double.NaN; // measured by the gateway's own requests when it joined
        /** Dispatched to it and not yet prefilled, in dispatch order. */
        final java.util.ArrayList<Ticket> inPrefill = new java.util.ArrayList<>(4);

        WorkerRate(double guess) {
            measured = new PrefillThroughput(guess, HORIZON_SECONDS);
        }
    }

    PrefillRates(WorkerSet workers, PrefillRateConfig config, double guess, Map<String, Double> saved) {
        this.workers = workers;
        this.config = config;
        this.guess = guess;
        this.saved = Map.copyOf(saved);
    }

    /** Rates an earlier run measured (the state file), by worker URL. */
    void saved(Map<String, Double> byUrl) {
        saved = Map.copyOf(byUrl);
    }

    void reconfigure(PrefillRateConfig next, double nextGuess) {
        config = next;
        guess = nextGuess;
    }

    private WorkerRate of(Worker w) {
        return rates.computeIfAbsent(w, k -> new WorkerRate(guess));
    }

    /** {@code t} went to {@code w}'s prefill ({@code t.dispatchedNanos} set). */
    void dispatched(Worker w, Ticket t, long now) {
        WorkerRate r = of(w);
        if (r.inPrefillTokens == 0) {
            r.measured.busy(true, now); // only busy time measures the rate
            r.lastProgressNanos = now;
            r.periodStartNanos = now;
            r.periodTokens = 0;
        }
        r.periodTokens += t.tokens;
        r.inPrefillTokens += t.tokens;
        r.inPrefill.add(t);
    }

    /**
     * Whether sending {@code next} to {@code w} now could push a request sent there moments ago past
     * its deadline: if {@code next} overtook it (it may: see {@link #OVERTAKE_WINDOW_NANOS}), that
     * one's first token would come after all of {@code w}'s work and {@code next}'s prompt.
     */
    boolean couldPushLate(Worker w, Ticket next, long now, DecodePace pace) {
        WorkerRate r = rates.get(w);
        if (r == null || r.inPrefill.isEmpty()) {
            return false;
        }
        double finishNanos = now + secondsUntilDone(w, next.tokens, now) * 1e9;
        for (Ticket q : r.inPrefill) {
            if (now - q.dispatchedNanos < OVERTAKE_WINDOW_NANOS
                    && finishNanos + pace.seconds(q.answerTokens) * 1e9 > q.waitDeadline) {
                return true;
            }
        }
        return false;
    }

    /** {@code t}'s prefill on {@code w} ended: {@code completed} (a sample of the rate) or abandoned. */
    void prefillEnded(Worker w, Ticket t, long now, boolean completed) {
        WorkerRate r = of(w);
        long tokens = t.tokens;
        r.inPrefillTokens -= tokens;
        r.inPrefill.remove(t);
        if (completed) {
            double prior = prior(w);
            if (!Double.isNaN(prior)) {
                r.measured.seed(prior); // until measured: the first samples are weighed against it
            }
            r.measured.completed(tokens, now, r.inPrefillTokens > 0);
        }
        r.lastProgressNanos = now;
        if (r.inPrefillTokens == 0) {
            r.measured.busy(false, now);
            r.periodTokens = 0;
        }
    }

    /**
     * {@code w}'s rate as the gateway's own requests measured it ({@code calibration}): a prior above a kept
     * one. Those requests also took the worker's cold start, so its first client completion is a sample.
     */
    void calibrated(Worker w, double tokensPerSecond) {
        WorkerRate r = of(w);
        r.calibrated = tokensPerSecond;
        r.measured.warmed();
    }

    /** Whether {@code w} has client prompts in prefill now (a calibration measured then would be slowed by them). */
    boolean busy(Worker w) {
        WorkerRate r = rates.get(w);
        return r != null && r.inPrefillTokens > 0;
    }

    /** Whether refusals are judged at the rates' optimistic bounds ({@link RateEstimate}) rather than only once known. */
    boolean earlyRejection() {
        return config.earlyRejection();
    }

    /** {@code w}'s rate at its optimistic bound ({@link RateEstimate}); +Infinity when nothing bounds it. */
    double upperRateOf(Worker w, long now) {
        WorkerRate r = rates.get(w);
        boolean busy = r != null && r.inPrefillTokens > 0;
        return RateEstimate.upper(sourceOf(w), rateOf(w), busy ? r.periodTokens : 0,
                busy ? (now - r.periodStartNanos) / 1e9 : 0);
    }

    /** The cluster's rate at its optimistic bound: the sum of the serving workers'; +Infinity when one is unbounded. */
    double upperClusterRate(long now) {
        boolean any = anyAvailable();
        double sum = 0;
        for (Worker w : workers.prefill()) {
            if (serving(w, any)) {
                sum += upperRateOf(w, now);
            }
        }
        return sum > 0 ? sum : Double.POSITIVE_INFINITY;
    }

    /** Prompt tokens still in prefill at {@code now} if every worker computed at its optimistic bound. */
    double upperRemainingTokens(long now) {
        double sum = 0;
        for (Map.Entry<Worker, WorkerRate> e : rates.entrySet()) {
            WorkerRate r = e.getValue();
            if (r.inPrefillTokens > 0) {
                double upper = upperRateOf(e.getKey(), now);
                double done = Double.isInfinite(upper) ? r.inPrefillTokens
                        : upper * Math.max(0, now - r.lastProgressNanos) / 1e9;
                sum += Math.max(0, r.inPrefillTokens - done);
            }
        }
        return sum;
    }

    /** {@code w}'s rate, by the order of {@link Source}. */
    double rateOf(Worker w) {
        WorkerRate r = rates.get(w);
        if (r != null && r.measured.measured()) {
            return r.measured.tokensPerSecond();
        }
        double prior = prior(w);
        return Double.isNaN(prior) ? guess : prior;
    }

    Source sourceOf(Worker w) {
        WorkerRate r = rates.get(w);
        if (r != null && r.measured.measured()) {
            return Source.MEASURED;
        }
        if (!Double.isNaN(config.priorOf(w.url()))) {
            return Source.CONFIGURED;
        }
        if (!Double.isNaN(telemetry(w))) {
            return Source.TELEMETRY;
        }
        if (r != null && !Double.isNaN(r.calibrated)) {
            return Source.CALIBRATED;
        }
        return saved.containsKey(w.url()) ? Source.STATE_FILE : Source.GUESS;
    }

    private double prior(Worker w) {
        double configured = config.priorOf(w.url());
        if (!Double.isNaN(configured)) {
            return configured;
        }
        double t = telemetry(w);
        if (!Double.isNaN(t)) {
            return t;
        }
        WorkerRate r = rates.get(w);
        if (r != null && !Double.isNaN(r.calibrated)) {
            return r.calibrated;
        }
        Double s = saved.get(w.url());
        return s == null ? Double.NaN : s;
    }

    private double telemetry(Worker w) {
        if (!config.fromTelemetry()) {
            return Double.NaN;
        }
        Double v = w.telemetry().values().get(WorkerTelemetry.Field.PREFILL_COMPUTE_RATE);
        return v == null || !(v > 0) ? Double.NaN : v;
    }

    /**
     * The workers whose rates make the cluster's are the available prefill workers, or all of them
     * when none is: whether {@code w} counts, given whether any is available. (No list is built:
     * this runs under the admission lock on every decision.)
     */
    private static boolean serving(Worker w, boolean anyAvailable) {
        return !anyAvailable || w.acceptsNewRequests();
    }

    private boolean anyAvailable() {
        for (Worker w : workers.prefill()) {
            if (w.acceptsNewRequests()) {
                return true;
            }
        }
        return false;
    }

    /** Prompt tokens per second the cluster's prefill works through when every worker is busy. */
    double clusterRate() {
        boolean any = anyAvailable();
        double sum = 0;
        for (Worker w : workers.prefill()) {
            if (serving(w, any)) {
                sum += rateOf(w);
            }
        }
        return sum > 0 ? sum : guess;
    }

    /**
     * The relative spread of the cluster's rate ({@link RateSpread}): the serving workers' spreads weighted
     * by their rates (a worker with no samples yet counts as {@link RateSpread#UNSEEN}).
     */
    double relativeSpread() {
        boolean any = anyAvailable();
        double sum = 0;
        double weighted = 0;
        for (Worker w : workers.prefill()) {
            if (serving(w, any)) {
                WorkerRate r = rates.get(w);
                double rate = rateOf(w);
                sum += rate;
                weighted += rate * (r == null ? RateSpread.UNSEEN : r.measured.relativeSpread());
            }
        }
        return sum > 0 ? weighted / sum : RateSpread.UNSEEN;
    }

    /** Whether predictions can be trusted: every serving prefill worker has a measured rate or a prior. */
    boolean known() {
        boolean any = anyAvailable();
        for (Worker w : workers.prefill()) {
            if (serving(w, any) && sourceOf(w) == Source.GUESS) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code w}'s rate is measured or a prior (not the guess): a prediction for it can be trusted. */
    boolean knows(Worker w) {
        return sourceOf(w) != Source.GUESS;
    }

    /**
     * The rate a prefill on {@code w} (null: not yet placed) is expected to run at: its own (measured,
     * else its prior), or the cluster's; divided by {@code guessSlack} when it is only the guess, and
     * also while no prefill has completed on {@code w} since this gateway started: a worker's first
     * prefill may carry its cold start, and a prior (a state file from another day, a number
     * configured for other prompts) may be off by more than the watchdog's factor. A stall verdict
     * throws work away and blames the pair, so it waits until the worker has been seen to complete.
     */
    double expectedRate(Worker w, double guessSlack) {
        if (w == null) {
            return known() ? clusterRate() : clusterRate() / guessSlack;
        }
        double r = rateOf(w);
        WorkerRate own = rates.get(w);
        boolean cold = own == null || !own.measured.warm();
        return sourceOf(w) == Source.GUESS || cold ? r / guessSlack : r;
    }

    /** How long {@code w} would take to finish what it still holds and {@code moreTokens} after it, at its rate. */
    double secondsUntilDone(Worker w, long moreTokens, long now) {
        return (remainingTokens(w, now) + moreTokens) / rateOf(w);
    }

    /** Prompt tokens still to compute in every worker's prefill at {@code now}, progress since its last completion deducted. */
    double remainingTokens(long now) {
        double sum = 0;
        for (Worker w : rates.keySet()) {
            sum += remainingTokens(w, now);
        }
        return sum;
    }

    /** The measured rates (by client prefills, else by the calibration), by worker URL (for the state file). */
    Map<String, Double> measuredByUrl() {
        Map<String, Double> out = new HashMap<>();
        rates.forEach((w, r) -> {
            if (r.measured.measured()) {
                out.put(w.url(), r.measured.tokensPerSecond());
            } else if (!Double.isNaN(r.calibrated)) {
                out.put(w.url(), r.calibrated);
            }
        });
        return out;
    }

    /** Each prefill worker's rate and where it comes from (admin view). */
    Map<Worker, AdmissionSnapshot.PrefillRate> view() {
        Map<Worker, AdmissionSnapshot.PrefillRate> out = new HashMap<>();
        for (Worker w : workers.prefill()) {
            out.put(w, new AdmissionSnapshot.PrefillRate(rateOf(w), sourceOf(w).label()));
        }
        return out;
    }

    /** Prompt tokens {@code w} still has to compute at {@code now}, its progress since its last completion deducted. */
    double remainingTokens(Worker w, long now) {
        WorkerRate r = rates.get(w);
        if (r == null || r.inPrefillTokens <= 0) {
            return 0;
        }
        double done = rateOf(w) * Math.max(0, now - r.lastProgressNanos) / 1e9;
        return Math.max(0, r.inPrefillTokens - done);
    }

    /** A worker left the set (reload): its estimate goes. */
    void remove(Worker w) {
        rates.remove(w);
    }
}
