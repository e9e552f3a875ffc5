package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class PrefixTreeTest {
    @Test
    void matchesTheSharedPrefixPerWorker() {
        PrefixTree<String> tree = new PrefixTree<>(1000);
        tree.insert("abcdef", "A");
        tree.insert("abcxyz", "B"); // splits A's edge after "abc"

        assertThat(tree.match("abcdef", List.of("A", "B", "C"))).containsExactly(6, 3, 0);
        assertThat(tree.match("abcxyz", List.of("A", "B"))).containsExactly(3, 6);
        assertThat(tree.match("abq", List.of("A", "B"))).containsExactly(2, 2);
        assertThat(tree.match("abcdefgh", List.of("A"))).containsExactly(6);
        assertThat(tree.match("", List.of("A"))).containsExactly(0);
        assertThat(tree.size("A")).isEqualTo(6);
        assertThat(tree.size("B")).isEqualTo(6);
        assertThat(tree.size("C")).isZero();
        tree.checkInvariants();
    }

    @Test
    void reinsertingCostsNothingMoreAndExtendingCostsTheNewPart() {
        PrefixTree<String> tree = new PrefixTree<>(1000);
        tree.insert("hello world", "A");
        tree.insert("hello world", "A");
        assertThat(tree.size("A")).isEqualTo(11);
        tree.insert("hello world, again", "A");
        assertThat(tree.size("A")).isEqualTo(18);
        tree.insert("hello", "A");
        assertThat(tree.size("A")).isEqualTo(18);
        assertThat(tree.match("hello world, again", List.of("A"))).containsExactly(18);
    }

    @Test
    void evictsTheLeastRecentlyUsedPrefixFirst() {
        PrefixTree<String> tree = new PrefixTree<>(30);
        tree.insert("a".repeat(10), "A");
        tree.insert("b".repeat(10), "A");
        tree.insert("c".repeat(10), "A");
        tree.insert("a".repeat(10), "A"); // used again: now b is the oldest
        tree.insert("d".repeat(10), "A");

        List<String> a = List.of("A");
        assertThat(tree.match("b".repeat(10), a)).containsExactly(0);
        assertThat(tree.match("a".repeat(10), a)).containsExactly(10);
        assertThat(tree.match("c".repeat(10), a)).containsExactly(10);
        assertThat(tree.match("d".repeat(10), a)).containsExactly(10);
        assertThat(tree.size("A")).isEqualTo(30);
    }

    @Test
    void evictsLeavesBeforeTheirSharedPrefix() {
        PrefixTree<String> tree = new PrefixTree<>(25);
        tree.insert("system-prompt" + "one", "A"); // 16
        tree.insert("system-prompt" + "two", "A"); // +3 = 19
        tree.insert("system-prompt" + "eight", "A"); // +5 = 24
        tree.insert("system-prompt" + "four", "A"); // +4 = 28: "one" (oldest leaf) goes, the shared part stays

        List<String> a = List.of("A");
        assertThat(tree.match("system-prompt" + "one", a)).containsExactly(13);
        assertThat(tree.match("system-prompt" + "two", a)).containsExactly(16);
        assertThat(tree.match("system-prompt" + "four", a)).containsExactly(17);
        assertThat(tree.size("A")).isEqualTo(25);
        tree.checkInvariants();
    }

    @Test
    void oneWorkersEvictionLeavesAnothersMarks() {
        PrefixTree<String> tree = new PrefixTree<>(20);
        tree.insert("shared-prefix-123456", "A");
        tree.insert("shared-prefix-123456", "B");
        tree.insert("zzzzzzzzzzzzzzzzzzzz", "A"); // A forgets the shared prefix, B keeps it

        assertThat(tree.match("shared-prefix-123456", List.of("A", "B"))).containsExactly(0, 20);
        assertThat(tree.size("A")).isEqualTo(20);
        assertThat(tree.size("B")).isEqualTo(20);
        tree.checkInvariants();
    }

    @Test
    void aKeyLongerThanTheBoundIsCut() {
        PrefixTree<String> tree = new PrefixTree<>(8);
        tree.insert("0123456789", "A");

        assertThat(tree.size("A")).isEqualTo(8);
        assertThat(tree.match("0123456789", List.of("A"))).containsExactly(8);
    }

    @Test
    void removeForgetsOneWorkerOnly() {
        PrefixTree<String> tree = new PrefixTree<>(1000);
        tree.insert("common-part/a", "A");
        tree.insert("common-part/b", "B");
        tree.remove("A");

        assertThat(tree.size("A")).isZero();
        assertThat(tree.match("common-part/a", List.of("A", "B"))).containsExactly(0, 12);
        assertThat(tree.checkInvariants()).isEqualTo(2);
    }

    @Test
    void memoryStaysBoundedUnderManyRandomInsertsAndRecentKeysStillMatch() {
        long bound = 20_000;
        PrefixTree<String> tree = new PrefixTree<>(bound);
        List<String> workers = List.of("A", "B", "C");
        SplittableRandom random = new SplittableRandom(7);
        List<String> systemPrompts = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            systemPrompts.add(randomText(random, 200 + random.nextInt(800)));
        }
        Map<String, Deque<String>> recent = new HashMap<>();

        for (int i = 0; i < 10_000; i++) {
            String worker = workers.get(random.nextInt(workers.size()));
            String key = systemPrompts.get(random.nextInt(systemPrompts.size())) + randomText(random, 1 + random.nextInt(300));
            tree.insert(key, worker);
            assertThat(tree.size(worker)).isLessThanOrEqualTo(bound);
            if (i % 500 == 0) {
                tree.checkInvariants();
            }
            Deque<String> last = recent.computeIfAbsent(worker, w -> new ArrayDeque<>());
            last.addFirst(key);
            if (last.size() > 5) {
                last.removeLast();
            }
        }

        long total = 0;
        for (String w : workers) {
            assertThat(tree.size(w)).isGreaterThan(bound / 2).isLessThanOrEqualTo(bound);
            total += tree.size(w);
            for (String key : recent.get(w)) {
                assertThat(tree.match(key, List.of(w))).containsExactly(key.length());
            }
        }
        // every node has a label of at least one character and at least one worker's mark
        assertThat((long) tree.checkInvariants()).isLessThanOrEqualTo(total);
    }

    private static String randomText(SplittableRandom random, int length) {
        char[] c = new char[length];
        for (int i = 0; i < length; i++) {
            c[i] = (char) ('a' + random.nextInt(26));
        }
        return new String(c);
    }
}
