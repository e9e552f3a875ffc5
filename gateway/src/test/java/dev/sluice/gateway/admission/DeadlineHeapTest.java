package dev.sluice.gateway.admission;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.admission.AdmissionFixtures.Recorder;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class DeadlineHeapTest {
    private static Ticket ticket(int i, long deadline) {
        Ticket t = new Ticket("t" + i, 1, 0, "t", Long.MAX_VALUE, Runnable::run, new Recorder());
        t.waitDeadline = deadline;
        return t;
    }

    @Test
    void alwaysYieldsTheEarliestDeadlineUnderRandomAddsAndRemovals() {
        SplittableRandom r = new SplittableRandom(7);
        DeadlineHeap heap = new DeadlineHeap();
        List<Ticket> model = new ArrayList<>();
        for (int step = 0; step < 20_000; step++) {
            int op = r.nextInt(10);
            if (op < 5 || model.isEmpty()) {
                Ticket t = ticket(step, r.nextLong(1_000));
                heap.add(t);
                model.add(t);
            } else if (op < 8) {
                Ticket t = model.remove(r.nextInt(model.size()));
                assertThat(heap.remove(t)).isTrue();
                assertThat(heap.remove(t)).isFalse();
                assertThat(t.deadlineIndex).isEqualTo(-1);
            } else {
                Ticket first = heap.peek();
                long min = model.stream().mapToLong(t -> t.waitDeadline).min().orElseThrow();
                assertThat(first.waitDeadline).isEqualTo(min);
                assertThat(heap.remove(first)).isTrue();
                model.remove(first);
            }
            assertThat(heap.size()).isEqualTo(model.size());
        }
    }

    @Test
    void rekeyRestoresTheOrderForNewDeadlines() {
        DeadlineHeap heap = new DeadlineHeap();
        List<Ticket> all = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            Ticket t = ticket(i, i);
            all.add(t);
            heap.add(t);
        }
        heap.rekey(t -> 1_000 - t.waitDeadline); // the order reverses
        List<Ticket> out = new ArrayList<>();
        Ticket t;
        while ((t = heap.peek()) != null) {
            heap.remove(t);
            out.add(t);
        }
        all.sort(Comparator.comparingLong((Ticket x) -> x.waitDeadline));
        assertThat(out).containsExactlyElementsOf(all);
        assertThat(out.get(0).id()).isEqualTo("t99");
    }

    @Test
    void aTicketOfAnotherHeapIsNotRemoved() {
        DeadlineHeap one = new DeadlineHeap();
        DeadlineHeap other = new DeadlineHeap();
        Ticket a = ticket(1, 5);
        Ticket b = ticket(2, 6);
        one.add(a);
        other.add(b); // same index 0 in its own heap
        assertThat(one.remove(b)).isFalse();
        assertThat(one.peek()).isSameAs(a);
    }
}
