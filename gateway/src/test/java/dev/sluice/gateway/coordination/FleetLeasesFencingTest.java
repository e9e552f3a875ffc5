package dev.sluice.gateway.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.admission.AdmissionController;
import dev.sluice.gateway.admission.AdmissionSnapshot;
import dev.sluice.gateway.admission.Rejection;
import dev.sluice.gateway.admission.Ticket;
import dev.sluice.gateway.admission.TicketListener;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.TokenizerConfig;
import dev.sluice.gateway.config.CoordinationConfig;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.GatewayConfig.WorkersConfig;
import dev.sluice.gateway.coordination.CoordinationStatus.Mode;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerState;
import dev.sluice.gateway.routing.WorkerStatus;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.MockTicker;
import io.netty.util.concurrent.Ticker;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link FleetLeases}' own rules as the holder of a lease, on a clock the test moves: the lease counted
 * from the renewal's send (LeaseTiming) fences admission by itself when no answer came in time; an
 * exception inside a renewal does not end the renewals; an answer that comes after a newer renewal was
 * sent, or after the lease it granted ran out, is dropped and counted.
 *
 * <p>The store is {@link ScriptedLeaseStore}, answered by hand: these tests are about what FleetLeases does
 * with answers, missing ones and exceptions, not about Redis (lease.lua on a real redis-server:
 * LeaseScriptTest; FleetLeases on one: FleetLeasesTest). FleetLeases runs on an {@link EmbeddedChannel}'s
 * event loop driven by a {@link MockTicker}, and that ticker is the clock of FleetLeases and of admission:
 * a renewal runs only when the test runs the loop's due tasks, so "no renewal ran" is a fact, not a race.
 */
class FleetLeasesFencingTest {
    private static final Duration TTL = Duration.ofSeconds(2);
    private static final Duration RENEW = Duration.ofMillis(500);
    /** What a renewal sent at t grants until: t + TTL - the margin (LeaseTiming: a twentieth of the lease). */
    private static final Duration VALID = Duration.ofMillis(1900);
    private static final String PREFILL = "http://10.0.0.1:30000";
    private static final String DECODE = "http://10.0.1.1:30001";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final MockTicker ticker = Ticker.newMockTicker();
    private final EmbeddedChannel loop = EmbeddedChannel.builder().ticker(ticker).build();
    private final ScriptedLeaseStore store = new ScriptedLeaseStore();
    private final WorkerSet workers = new WorkerSet(new WorkersConfig(
            List.of(new WorkerEndpoint(PREFILL, "10.0.0.1", 30000, 8998)),
            List.of(new WorkerEndpoint(DECODE, "10.0.1.1", 30001, null))));
    private final DemandTally tally = new DemandTally(dev.sluice.gateway.admission.AdmissionObserver.NONE);
    private final AdmissionController admission;
    private final FleetLeases leases;

    FleetLeasesFencingTest() {
        workers.all().forEach(w -> w.status(new WorkerStatus(WorkerState.HEALTHY, "", Instant.now())));
        admission = new AdmissionController(new AdmissionConfig(8, 90_000, Duration.ofSeconds(30), 50_000, 6, 60_000,
                12, 10_000, Duration.ofSeconds(1), Duration.ofSeconds(60), Duration.ofSeconds(30), List.of("normal"),
                "normal", Map.of(), new TokenizerConfig(Optional.empty(), 4.0, 4, 1)), workers, tally,
                ticker::nanoTime);
        CoordinationConfig config = new CoordinationConfig("redis://127.0.0.1:1", Optional.empty(), false,
                Optional.empty(), "a", TTL, RENEW);
        leases = new FleetLeases(config, "a", () -> "a:8080", store, admission, workers, tally, loop.eventLoop(),
                ticker::nanoTime);
    }

    @AfterEach
    void close() {
        leases.close();
        AdmissionSnapshot s = admission.snapshot();
        assertThat(List.of(s.queued(), s.pendingTokens(), (long) s.dispatched())).as("queued, pending, dispatched")
                .containsExactly(0, 0L, 0L);
        assertThat(loop.finishAndReleaseAll()).isFalse();
    }

    private static Map<String, Long> grants(long queue) {
        return Map.of("queue", queue, "pending_tokens", 90_000L, "prefill_requests|" + PREFILL, 3L,
                "prefill_tokens|" + PREFILL, 60_000L, "decode_streams|" + DECODE, 6L);
    }

    private void advance(Duration d) {
        ticker.advance(d.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** Runs what is due on the loop: the renewal when its time has come, answers handed back. */
    private void run() {
        loop.runPendingTasks();
    }

    private void answer(ScriptedLeaseStore.Renewal r, long queue) {
        r.answer().complete(ScriptedLeaseStore.answer(r, grants(queue)));
        run();
    }

    /** A request offered now: admitted at once (then ended), or refused. */
    private boolean admits() {
        Ticket t = new Ticket("r", 1000, 0, "t", Long.MAX_VALUE, Runnable::run, new TicketListener() {
            @Override
            public void granted(Worker prefill, Worker decode) {
            }

            @Override
            public void rejected(Rejection rejection) {
            }
        });
        Rejection refused = admission.submit(t);
        boolean queued = admission.release(t); // ended either way: a queued one leaves, an admitted one is done
        assertThat(queued).as("decided at once: admitted or refused, never left waiting").isFalse();
        return refused == null;
    }

    /** The grant a renewal reports it admits on until its answer is applied (the report's 4th figure). */
    private static long enforcedQueue(ScriptedLeaseStore.Renewal r) throws Exception {
        return JSON.readTree(r.demandJson()).path("queue").path(3).asLong(-1);
    }

    @Test
    void whenTheLeaseCountedFromItsRenewalsSendRunsOutAdmissionRefusesBeforeAnyRenewalRuns() throws Exception {
        leases.start();
        run();
        assertThat(store.renewals()).hasSize(1);
        assertThat(admits()).as("nothing before the first grant").isFalse();
        advance(Duration.ofMillis(300)); // the answer takes 300 ms: the lease still counts from the send
        answer(store.last(), 4);
        assertThat(leases.status().mode()).isEqualTo(Mode.LEASED);
        assertThat(admits()).isTrue();

        advance(RENEW.minusMillis(300));
        run(); // the next renewal goes out (t = 500 ms); its answer never comes
        assertThat(store.renewals()).hasSize(2);
        assertThat(enforcedQueue(store.last())).as("it admits on its grant meanwhile, and says so").isEqualTo(4);

        advance(VALID.minus(RENEW).minusNanos(1)); // t = 1.9 s - 1 ns: the lease of the renewal sent at 0 holds
        assertThat(admits()).isTrue();
        advance(Duration.ofNanos(1)); // t = 1.9 s: it has run out
        assertThat(admits()).as("the lapsed share is no share").isFalse();
        assertThat(store.renewals()).as("no renewal ran in between").hasSize(2);
        assertThat(leases.status().mode()).as("FleetLeases has not run since: the fence is admission's own")
                .isEqualTo(Mode.LEASED);

        advance(RENEW);
        run(); // t = 2.4 s: the renewal sent at 500 ms is still awaited (not past its timeout): no second one
        assertThat(leases.status().mode()).isEqualTo(Mode.LAPSED);
        assertThat(store.renewals()).hasSize(2);
        assertThat(admits()).isFalse();
        advance(Duration.ofMillis(600)); // t = 3.0 s: past the lease and a renew interval, abandoned, asked again
        run();
        assertThat(store.renewals()).hasSize(3);
        assertThat(enforcedQueue(store.last())).as("a lapsed replica reports it admits on nothing").isZero();
        answer(store.last(), 4);
        assertThat(leases.status().mode()).isEqualTo(Mode.LEASED);
        assertThat(admits()).isTrue();
    }

    @Test
    void anExceptionOrAnErrorThrownByTheStoreIsCountedAndTheNextRenewalSucceeds() {
        leases.start();
        run();
        answer(store.last(), 4);
        for (Throwable thrown : List.of(new AssertionError("a bug in the store"), new IllegalStateException("another"))) {
            int sent = store.renewals().size();
            long errors = leases.status().renewalErrors();
            store.throwNext(thrown);
            advance(RENEW);
            run();
            assertThat(leases.status().renewalErrors()).isEqualTo(errors + 1);
            assertThat(leases.status().reason()).contains(thrown.getMessage());
            assertThat(leases.status().mode()).as("the lease is held, as with Redis down").isEqualTo(Mode.HELD);
            assertThat(admits()).as("on the grant still valid").isTrue();

            advance(RENEW);
            run(); // the renewals go on
            assertThat(store.renewals()).hasSize(sent + 1);
            answer(store.last(), 5 + sent);
            assertThat(leases.status().mode()).isEqualTo(Mode.LEASED);
            assertThat(leases.status().grants()).containsEntry("queue", 5L + sent);
        }
        assertThat(leases.status().renewalErrors()).isEqualTo(2);
        assertThat(leases.status().lateReplies()).isZero();
    }

    @Test
    void aStoreThatThrowsAtEveryRenewalLeavesTheReplicaOnBudgetOverNOnceTheLeaseRunsOutNotOnNothing() {
        leases.start();
        run();
        answer(store.last(), 4);
        store.throwNext(new AssertionError("a bug in the store"));
        for (int i = 1; i <= 4; i++) { // t = 2 s: past the lease of the renewal sent at 0
            advance(RENEW);
            run();
            store.throwNext(new AssertionError("a bug in the store"));
        }
        assertThat(leases.status().renewalErrors()).isEqualTo(4);
        assertThat(leases.status().mode()).isEqualTo(Mode.FALLBACK);
        assertThat(leases.status().grants()).as("the whole budget / 1 (the one member it knew)").containsEntry("queue",
                8L);
        assertThat(admits()).isTrue();

        store.throwNext(null);
        advance(RENEW);
        run();
        answer(store.last(), 4);
        assertThat(leases.status().mode()).isEqualTo(Mode.LEASED);
    }

    @Test
    void anAnswerToARenewalAbandonedForANewerOneIsDroppedAndCounted() {
        leases.start();
        run();
        answer(store.last(), 4); // t = 0
        advance(RENEW);
        run(); // t = 0.5 s: sent, then the process (or the network) stalls
        ScriptedLeaseStore.Renewal stalled = store.last();
        advance(TTL.plus(RENEW)); // t = 3 s: the stalled one is given up, a newer one sent
        run();
        assertThat(store.renewals()).hasSize(3);
        ScriptedLeaseStore.Renewal newer = store.last();

        stalled.answer().complete(ScriptedLeaseStore.answer(stalled, grants(9)));
        run();
        assertThat(leases.status().lateReplies()).isEqualTo(1);
        assertThat(leases.status().grants()).as("its grants are not applied").containsEntry("queue", 4L);
        assertThat(store.renewals()).as("the newer one still awaited: not sent again beside it").hasSize(3);
        assertThat(leases.status().mode()).isEqualTo(Mode.LAPSED);
        assertThat(admits()).isFalse();

        answer(newer, 5);
        assertThat(leases.status().mode()).isEqualTo(Mode.LEASED);
        assertThat(leases.status().grants()).containsEntry("queue", 5L);
        assertThat(admits()).isTrue();
    }

    @Test
    void anAnswerThatComesAfterTheLeaseItGrantedRanOutIsDroppedCountedAndAskedAgainAtOnce() {
        leases.start();
        run();
        answer(store.last(), 4); // t = 0
        advance(RENEW);
        run(); // t = 0.5 s
        ScriptedLeaseStore.Renewal slow = store.last();
        advance(Duration.ofMillis(1950)); // t = 2.45 s: past what it would grant (0.5 + 1.9 s), not yet given up
        slow.answer().complete(ScriptedLeaseStore.answer(slow, grants(9)));
        run();
        assertThat(leases.status().lateReplies()).isEqualTo(1);
        assertThat(leases.status().grants()).as("its grants are not applied").containsEntry("queue", 4L);
        assertThat(admits()).isFalse();
        assertThat(store.renewals()).as("asked again at once, on what is true now").hasSize(3);

        answer(store.last(), 6);
        assertThat(leases.status().mode()).isEqualTo(Mode.LEASED);
        assertThat(leases.status().grants()).containsEntry("queue", 6L);
        assertThat(admits()).isTrue();
        assertThat(leases.status().renewalErrors()).isZero();
    }
}
