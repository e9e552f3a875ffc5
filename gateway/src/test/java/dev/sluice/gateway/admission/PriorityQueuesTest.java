package dev.sluice.gateway.admission;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionFixtures.Recorder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PriorityQueuesTest {
    private static final long TIMEOUT = 1_000;

    private static Ticket ticket(String id, long tokens, int priority, String tenant, long queuedAt, long clientDeadline) {
        Ticket t = new Ticket(id, tokens, priority, tenant, clientDeadline, Runnable::run, new Recorder());
        t.enqueuedNanos = queuedAt;
        return t;
    }

    private static Ticket ticket(String id, int priority, String tenant) {
        return ticket(id, 10, priority, tenant, 0, Long.MAX_VALUE);
    }

    private static List<String> ids(List<Ticket> tickets) {
        return tickets.stream().map(Ticket::id).toList();
    }

    @Test
    void higherClassesFirstAndTenantsInTurnWithinAClass() {
        PriorityQueues q = new PriorityQueues(3, TIMEOUT, false);
        q.add(ticket("a1", 1, "a"));
        q.add(ticket("a2", 1, "a"));
        q.add(ticket("b1", 1, "b"));
        q.add(ticket("low", 2, "a"));
        q.add(ticket("high", 0, "c"));
        assertThat(q.size()).isEqualTo(5);
        assertThat(q.peek().id()).isEqualTo("high");
        assertThat(ids(q.drainInOrder())).containsExactly("high", "a1", "b1", "a2", "low");
        assertThat(q.size()).isZero();
        assertThat(q.peek()).isNull();
    }

    /**
     * A ticket that left the queue is not held until the commitment horizon: at thousands of requests a
     * second, holding each for 4 s kept every recent request reachable and slowed the collector.
     */
    @Test
    void ticketsThatLeftTheQueueAreNotHeldForTheCommitmentHorizon() {
        PriorityQueues q = new PriorityQueues(3, TIMEOUT, false);
        long horizon = 4_000_000_000L;
        Ticket d1 = ticket("d1", 1, "a");
        Ticket d2 = ticket("d2", 1, "b");
        Ticket waiting = ticket("w", 1, "c");
        for (Ticket t : List.of(d1, d2, waiting)) {
            q.add(t);
            t.state = Ticket.State.QUEUED;
        }
        for (Ticket t : List.of(q.poll(), q.poll())) {
            t.state = Ticket.State.DISPATCHED;
        }
        assertThat(waiting.state).isEqualTo(Ticket.State.QUEUED);
        q.commitDue(1_000, horizon); // long before the horizon
        assertThat(q.awaitingCommitment()).as("only the ticket still queued").isEqualTo(1);
        assertThat(waiting.committed).isFalse();
        q.commitDue(horizon, horizon);
        assertThat(q.awaitingCommitment()).isZero();
        assertThat(waiting.committed).as("committed once it waited the horizon").isTrue();
    }

    @Test
    void aRetryGoesToTheFrontOfItsClassAndItsTenantIsServedNext() {
        PriorityQueues q = new PriorityQueues(3, TIMEOUT, false);
        q.add(ticket("a1", 1, "a"));
        q.add(ticket("b1", 1, "b"));
        q.addFirst(ticket("b0", 1, "b"));
        assertThat(ids(q.drainInOrder())).containsExactly("b0", "a1", "b1");
    }

    @Test
    void tokensAndTenantUseFollowEveryAddAndRemoval() {
        PriorityQueues q = new PriorityQueues(3, TIMEOUT, false);
        Ticket a = ticket("a", 100, 0, "x", 0, Long.MAX_VALUE);
        Ticket b = ticket("b", 20, 1, "x", 0, Long.MAX_VALUE);
        Ticket c = ticket("c", 3, 2, "y", 0, Long.MAX_VALUE);
        q.add(a);
        q.add(b);
        q.add(c);
        assertThat(q.tokensAtOrAbove(0)).isEqualTo(100);
        assertThat(q.tokensAtOrAbove(1)).isEqualTo(120);
        assertThat(q.tokensAtOrAbove(2)).isEqualTo(123);
        assertThat(q.tenantUse().get("x")).containsExactly(2, 120);
        assertThat(q.tenantUse().get("y")).containsExactly(1, 3);

        assertThat(q.remove(b)).isTrue();
        assertThat(q.remove(b)).isFalse(); // not twice
        assertThat(q.poll()).isSameAs(a);
        assertThat(q.tokensAtOrAbove(2)).isEqualTo(3);
        assertThat(q.tenantUse()).containsOnlyKeys("y");
        q.tenantUse().get("y")[0] = 99; // a copy: the caller may change it
        assertThat(q.tenantUse().get("y")).containsExactly(1, 3);
        assertThat(q.tenantsOf(2)).containsEntry("y", 1);
    }

    @Test
    void evictionTakesTheLowestClassFirstAndTheBusiestTenantsNewestTicket() {
        PriorityQueues q = new PriorityQueues(3, TIMEOUT, false);
        q.add(ticket("n-a1", 1, "a"));
        q.add(ticket("l-a1", 2, "a"));
        q.add(ticket("l-b1", 2, "b"));
        q.add(ticket("l-b2", 2, "b"));
        q.add(ticket("l-b3", 2, "b"));
        q.add(ticket("h-a1", 0, "a"));
        List<String> forHigh = ids(q.evictionOrder(0, false));
        // b holds 3 to a's 1: b's two newest first, then one each (a tie: either order), then the next class
        assertThat(forHigh.subList(0, 2)).containsExactly("l-b3", "l-b2");
        assertThat(forHigh.subList(2, 4)).containsExactlyInAnyOrder("l-b1", "l-a1");
        assertThat(forHigh.subList(4, 5)).containsExactly("n-a1");
        assertThat(ids(q.evictionOrder(1, false))).hasSize(4).doesNotContain("n-a1");
        assertThat(q.evictionOrder(2, false)).isEmpty(); // never a request of the newcomer's class or higher
        assertThat(q.size()).isEqualTo(6); // only a plan
    }

    @Test
    void dueReturnsOnlyTicketsWhoseWaitEndedHighestClassFirst() {
        PriorityQueues q = new PriorityQueues(3, TIMEOUT, false);
        Ticket lowOld = ticket("lowOld", 10, 2, "a", 0, Long.MAX_VALUE);       // queue_timeout at 1000
        Ticket highClient = ticket("highClient", 10, 0, "b", 500, 700);       // client deadline at 700
        Ticket fresh = ticket("fresh", 10, 1, "a", 900, Long.MAX_VALUE);      // until 1900
        q.add(lowOld);
        q.add(highClient);
        q.add(fresh);

        assertThat(q.due(699)).isEmpty();
        List<Ticket> due = q.due(1000);
        assertThat(ids(due)).containsExactly("highClient", "lowOld");
        due.forEach(q::remove);
        assertThat(q.size()).isEqualTo(1);
        assertThat(q.due(1899)).isEmpty();
        assertThat(ids(q.due(1900))).containsExactly("fresh");
    }

    @Test
    void aNewQueueTimeoutMovesEveryWaitingTicketsDeadline() {
        PriorityQueues q = new PriorityQueues(3, TIMEOUT, false);
        q.add(ticket("a", 10, 1, "a", 0, Long.MAX_VALUE)); // until 1000
        q.add(ticket("b", 10, 1, "a", 100, 5_000));        // its client's own deadline, whatever the timeout
        q.add(ticket("c", 10, 1, "a", 100, 250));          // its client's deadline comes first either way
        q.queueTimeout(200);
        assertThat(ids(q.due(199))).isEmpty();
        assertThat(ids(q.due(200))).containsExactly("a");
        assertThat(ids(q.due(250))).containsExactly("c");
        assertThat(ids(q.due(4_999))).isEmpty();
        assertThat(ids(q.due(5_000))).containsExactly("b");
    }

    @Test
    void aTicketLeavingByPollOrRemoveIsNeverDue() {
        PriorityQueues q = new PriorityQueues(3, TIMEOUT, false);
        List<Ticket> all = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            Ticket t = ticket("t" + i, 10, 1, "a", i, Long.MAX_VALUE);
            all.add(t);
            q.add(t);
        }
        q.poll();
        q.remove(all.get(5));
        assertThat(ids(q.due(Long.MAX_VALUE / 2))).containsExactlyInAnyOrder("t1", "t2", "t3", "t4", "t6", "t7", "t8",
                "t9");
    }
}
