package dev.sluice.gateway.admission;

import static dev.sluice.gateway.admission.AdmissionFixtures.workers;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.PrefillRateConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Every newcomer's verdict ({@link QueueJudge#late}) against the verdict before the indexes, kept
 * here as the reference ({@link #reference}: a walk of the queue in service order, or for the
 * newcomer last in that order the running sum), over random queues as the door, the dispatcher, the
 * reviews and departures leave them: classes, tenants sharing a class, deadlines early and late,
 * non-streamed answers, retries put back in front, prefills in flight and finishing (the rates
 * measured), early rejection's moving bound, the decode pace and the prediction margin moving, time
 * passing, both queue orders and both shedding rules. The
 * same requests late or shed, with the same work ahead and the same predicted seconds, to the bit.
 * And a newcomer's first queue report from the indexes is the walk's.
 */
class QueueJudgeDifferentialTest {
    private static final long START = 1_000_000_000L;
    private static final AdmissionConfig CONFIG = AdmissionFixtures.config(100_000, 100_000_000,
            Duration.ofSeconds(30), 100_000, 1, 100_000, 100);

    private static List<String> verdict(List<Forecast.Late> late) {
        List<String> out = new ArrayList<>();
        for (Forecast.Late l : late) {
            out.add(l.ticket().id() + (l.shed() ? " shed" : " late") + " ahead=" + l.tokensAhead() + " seconds="
                    + l.predictedSeconds() + " spared=" + l.committedSpared());
        }
        return out;
    }

    /**
     * The newcomer's verdict as it was before the indexes: the walk, or the running sum when it is last;
     * with the commitment rule written out (a newcomer that makes committed requests late that are in time
     * without it is refused instead) and the longest sheddable prompt found by reading every ticket.
     */
    private static List<Forecast.Late> reference(PriorityQueues queue, Ticket t, boolean shedLongest,
                                                 java.util.function.Supplier<Forecast> forecast, double spread) {
        Forecast judged = forecast.get().newcomer(t, spread);
        if (!queue.isLast(t)) {
            List<Forecast.Late> late = judged.late(queue.serviceOrder(), shedLongest);
            if (late.stream().anyMatch(l -> l.ticket() == t)
                    || late.stream().noneMatch(l -> l.ticket().committed)) {
                return late;
            }
            List<Ticket> without = queue.serviceOrder();
            without.remove(t);
            List<Ticket> lateAnyway = forecast.get().late(without, shedLongest).stream().map(Forecast.Late::ticket)
                    .toList();
            int spared = (int) late.stream().filter(l -> l.ticket().committed && !lateAnyway.contains(l.ticket()))
                    .count();
            if (spared == 0) {
                return late;
            }
            Forecast f = forecast.get().newcomer(t, spread);
            double seconds = f.until(queue.serviceOrder(), t);
            return List.of(new Forecast.Late(t, seconds, f.tokensAhead(), true, spared));
        }
        long ahead = queue.tokensAtOrAbove(t.priority) - t.tokens;
        judged.after(ahead);
        double seconds = judged.secondsFor(t);
        double before = judged.tokensAhead();
        if (judged.take(t)) {
            return List.of();
        }
        Ticket longest = null;
        for (Ticket x : shedLongest ? queue.serviceOrder() : List.<Ticket>of()) {
            if (x.priority == t.priority && x != t && !x.committed) {
                longest = TenantQueue.longer(longest, x);
            }
        }
        if (longest != null && longest.tokens > t.tokens) {
            judged.after(ahead - longest.tokens);
            if (judged.take(t)) {
                return List.of(new Forecast.Late(longest, Double.NaN, before, true));
            }
        }
        return List.of(new Forecast.Late(t, seconds, before, false));
    }

    @Test
    void everyNewcomersVerdictIsTheReferences() {
        Random random = new Random(7);
        int newcomers = 0;
        int indexed = 0;
        int indexedNotEmpty = 0;
        int walked = 0;
        int reports = 0;
        java.util.Set<Double> judgedRates = new java.util.HashSet<>();
        java.util.Set<Double> spreads = new java.util.HashSet<>();
        int spared = 0;
        int committed = 0;
        for (int round = 0; round < 400; round++) {
            WorkerSet workers = workers(2, 1);
            boolean early = round % 4 == 3; // early rejection: judged at the rate's bound, which moves with time
            PrefillRates rates = new PrefillRates(workers, new PrefillRateConfig(OptionalDouble.of(1_000), Map.of(),
                    false, Optional.empty(), early), 8_000, Map.of());
            PrefillLedger ledger = new PrefillLedger(rates);
            QueueJudge judge = new QueueJudge(rates, ledger, AdmissionObserver.NONE);
            boolean edf = random.nextBoolean();
            boolean shedLongest = random.nextBoolean();
            int classes = 1 + random.nextInt(3);
            int tenants = 1 + random.nextInt(3);
            PriorityQueues queue = new PriorityQueues(classes, 30_000_000_000L, edf);
            long commitAfter = round % 5 == 0 ? 0 : (long) (random.nextDouble() * 6e9); // 0: never committed
            List<Ticket> queued = new ArrayList<>();
            List<Ticket> inPrefill = new ArrayList<>();
            long now = START;
            int steps = 20 + random.nextInt(300);
            for (int i = 0; i < steps; i++) {
                int op = random.nextInt(100);
                if (op < 55) {
                    long tokens = 50 + random.nextInt(3_000);
                    long deadline = random.nextInt(5) == 0 ? Long.MAX_VALUE
                            : now + (long) ((0.2 + random.nextDouble() * (random.nextBoolean() ? 10 : 120)) * 1e9);
                    Ticket t = new Ticket(round + "-" + i, tokens, random.nextInt(classes), "t" + random.nextInt(tenants),
                            deadline, Runnable::run, new AdmissionFixtures.Recorder());
                    if (random.nextInt(5) == 0) {
                        t.wholeAnswer(random.nextInt(500));
                    }
                    t.enqueuedNanos = now;
                    queue.add(t);
                    long walksBefore = judge.walks;
                    long indexedBefore = judge.indexedVerdicts;
                    double rate = judge.judgedRate(now);
                    double remaining = early ? rates.upperRemainingTokens(now) : rates.remainingTokens(now);
                    judgedRates.add(rate);
                    long at = now;
                    List<String> expected = Double.isNaN(rate) ? List.of() : verdict(reference(queue, t, shedLongest,
                            () -> new Forecast(at, remaining, rate, ledger.pace, ledger.slack.seconds()),
                            judge.doorSpread()));
                    spreads.add(judge.doorSpread());
                    List<Forecast.Late> late = judge.late(queue, t, shedLongest, now);
                    assertThat(verdict(late)).as("round %d step %d: %d queued, %d classes, %d tenants, edf %s, shed %s",
                            round, i, queue.size(), classes, tenants, edf, shedLongest).isEqualTo(expected);
                    newcomers++;
                    walked += (int) (judge.walks - walksBefore);
                    if (judge.indexedVerdicts > indexedBefore) {
                        indexed++;
                        indexedNotEmpty += late.isEmpty() ? 0 : 1;
                    }
                    spared += late.stream().mapToInt(Forecast.Late::committedSpared).sum();
                    if (late.stream().anyMatch(l -> l.ticket() == t)) { // as the door does
                        queue.remove(t);
                    } else {
                        for (Forecast.Late l : late) {
                            queue.remove(l.ticket());
                            queued.remove(l.ticket());
                        }
                        queued.add(t);
                        reports += checkFirstReport(queue, t, rates.remainingTokens(now));
                    }
                } else if (op < 65) {
                    now += (long) (random.nextDouble() * 3e9);
                    queue.commitDue(now, commitAfter); // as the sweep does
                    committed = Math.max(committed, (int) queued.stream().filter(x -> x.committed).count());
                } else if (op < 73 && !queued.isEmpty()) { // a client leaves, or it is evicted
                    queue.remove(queued.remove(random.nextInt(queued.size())));
                } else if (op < 79) { // a review: it answers the late
                    for (Ticket t : queue.serviceOrder()) {
                        t.state = Ticket.State.QUEUED;
                    }
                    judge.review(queue, CONFIG, now, new Decisions.After());
                    queued.removeIf(t -> t.state == Ticket.State.ENDED);
                } else if (op < 86 && queue.size() > 0) { // the head is dispatched
                    Ticket head = queue.poll();
                    queued.remove(head);
                    head.prefill = workers.prefill().get(random.nextInt(2));
                    ledger.dispatched(head, now);
                    inPrefill.add(head);
                } else if (op < 91 && !inPrefill.isEmpty()) { // a prefill is done: the rates may change
                    ledger.prefillEnded(inPrefill.remove(0), now, true);
                } else if (op < 94) {
                    ledger.pace.observed(0.1 + random.nextDouble() * 3, 8 + random.nextInt(200));
                } else if (op < 97) {
                    ledger.slack.observed(random.nextDouble() * 2 - 0.5);
                } else if (!queued.isEmpty()) { // a retry back at the front of its class
                    Ticket t = queued.get(random.nextInt(queued.size()));
                    queue.remove(t);
                    queue.addFirst(t);
                }
            }
        }
        assertThat(newcomers).isGreaterThan(20_000);
        assertThat(indexed).as("newcomers ahead of others judged from the indexes").isGreaterThan(3_000);
        assertThat(indexedNotEmpty).as("of which refused or shedding one").isGreaterThan(100);
        assertThat(walked).as("newcomers judged by a walk (the bound could not vouch)").isGreaterThan(100);
        assertThat(reports).isGreaterThan(10_000);
        assertThat(spreads).as("door margins judged with (the rate's spread, measured)").hasSizeGreaterThan(20);
        assertThat(committed).as("queued requests committed at once").isGreaterThan(20);
        assertThat(spared).as("newcomers refused for committed requests (walked)").isGreaterThan(10);
        assertThat(judgedRates).as("rates judged at (measured, bounds)").hasSizeGreaterThan(100);
        System.out.printf("newcomers %d, from the indexes %d (%d refused or shedding), walked %d, reports %d, "
                + "spared %d, committed at once up to %d, margins %d%n", newcomers, indexed, indexedNotEmpty, walked,
                reports, spared, committed, spreads.size());
    }

    /** The first report of {@code t} from the indexes: its place and the tokens before it, as a walk finds them. */
    private static int checkFirstReport(PriorityQueues queue, Ticket t, double remaining) {
        List<Ticket> order = queue.serviceOrder();
        int at = order.indexOf(t);
        long before = 0;
        Ticket longest = null;
        for (int i = 0; i < at; i++) {
            before += order.get(i).tokens;
            if (order.get(i).priority == t.priority && !order.get(i).committed) {
                longest = TenantQueue.longer(longest, order.get(i));
            }
        }
        QueuePlace place = queue.place(t);
        assertThat(place.count).isEqualTo(at);
        assertThat(place.tokens).isEqualTo(before);
        assertThat(place.longestOfClass).isSameAs(longest);
        assertThat(QueueStatus.etaMillis(remaining + place.tokens, 1_000, 0))
                .isEqualTo(QueueStatus.etaMillis(remaining + before, 1_000, 0));
        return 1;
    }

    @Test
    void aTenantQueueIsTheSortedSetItReplaces() {
        Random random = new Random(11);
        java.util.Comparator<Ticket> order = java.util.Comparator.<Ticket>comparingLong(t -> t.waitDeadline)
                .thenComparingLong(t -> t.arrival);
        for (int round = 0; round < 200; round++) {
            TenantQueue q = new TenantQueue(order);
            java.util.TreeSet<Ticket> reference = new java.util.TreeSet<>(order);
            for (int i = 0; i < 300; i++) {
                if (random.nextInt(3) > 0 || reference.isEmpty()) {
                    Ticket t = new Ticket("x" + i, 1 + random.nextInt(50), 0, "t", Long.MAX_VALUE, Runnable::run,
                            new AdmissionFixtures.Recorder());
                    t.waitDeadline = random.nextInt(40);
                    t.arrival = i;
                    q.add(t);
                    reference.add(t);
                } else if (random.nextInt(4) == 0) { // one commits: it may no longer give way
                    Ticket t = new ArrayList<>(reference).get(random.nextInt(reference.size()));
                    assertThat(q.recommit(t)).isTrue();
                } else {
                    Ticket t = new ArrayList<>(reference).get(random.nextInt(reference.size()));
                    assertThat(q.remove(t)).isTrue();
                    assertThat(q.remove(t)).isFalse();
                    reference.remove(t);
                }
                List<Ticket> all = new ArrayList<>(reference);
                assertThat(new ArrayList<>(q)).isEqualTo(all);
                assertThat(q.size()).isEqualTo(all.size());
                if (all.isEmpty()) {
                    continue;
                }
                assertThat(q.first()).isSameAs(reference.first());
                assertThat(q.last()).isSameAs(reference.last());
                int k = random.nextInt(all.size() + 1);
                QueuePlace p = new QueuePlace();
                q.first(k, p);
                List<Ticket> head = all.subList(0, k);
                assertThat(p.count).isEqualTo(k);
                assertThat(p.tokens).isEqualTo(head.stream().mapToLong(Ticket::tokens).sum());
                assertThat(p.longestOfClass).isSameAs(head.stream().filter(x -> !x.committed)
                        .reduce(null, TenantQueue::longer));
                Ticket any = all.get(random.nextInt(all.size()));
                assertThat(q.rank(any)).isEqualTo(all.indexOf(any));
                assertThat(q.longest()).isSameAs(all.stream().reduce(null, TenantQueue::longer));
                assertThat(q.longestSheddable()).isSameAs(all.stream().filter(x -> !x.committed)
                        .reduce(null, TenantQueue::longer));
            }
        }
    }
}
