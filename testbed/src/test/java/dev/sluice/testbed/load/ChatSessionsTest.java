package dev.sluice.testbed.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.testbed.load.ChatSessions.Message;
import dev.sluice.testbed.load.ChatSessions.Session;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The chat-sessions workload: a function of its seed, shared prefixes, prompts that grow turn by turn. */
class ChatSessionsTest {
    private static final Duration THINK = Duration.ofSeconds(4);

    private static SessionWorkload workload(int sessions) {
        return new SessionWorkload(sessions, 6, 8, 2_000, 100, 128, 1.0, 2.0, THINK);
    }

    @Test
    void oneSeedGivesTheSameRunAndAnotherSeedAnotherOne() {
        ChatSessions a = new ChatSessions(workload(64), 7, null);
        ChatSessions b = new ChatSessions(workload(64), 7, null);
        ChatSessions other = new ChatSessions(workload(64), 8, null);

        assertThat(a.requests()).isEqualTo(64 * 6);
        for (int s = 0; s < 64; s++) {
            Session x = a.sessions().get(s);
            Session y = b.sessions().get(s);
            assertThat(y.startNanos()).isEqualTo(x.startNanos());
            assertThat(y.systemPrompt()).isEqualTo(x.systemPrompt());
            assertThat(y.thinkNanos()).containsExactly(x.thinkNanos());
            for (int t = 0; t < 6; t++) {
                assertThat(b.messages(s, t)).isEqualTo(a.messages(s, t));
            }
        }
        assertThat(other.messages(0, 0).get(0)).isNotEqualTo(a.messages(0, 0).get(0));
        assertThat(other.sessions().get(1).startNanos()).isNotEqualTo(a.sessions().get(1).startNanos());
    }

    @Test
    void conversationsOnOneSystemPromptShareItAndNothingElse() {
        ChatSessions c = new ChatSessions(workload(64), 3, null);
        List<Session> sessions = c.sessions();
        Session first = sessions.get(0);
        Session sameprompt = sessions.stream().skip(1).filter(s -> s.systemPrompt() == first.systemPrompt())
                .findFirst().orElseThrow();
        Session otherprompt = sessions.stream().filter(s -> s.systemPrompt() != first.systemPrompt())
                .findFirst().orElseThrow();

        List<Message> m1 = c.messages(first.id(), 2);
        List<Message> m2 = c.messages(sameprompt.id(), 2);
        assertThat(m2.get(0)).isEqualTo(m1.get(0));
        assertThat(m2.get(0).role()).isEqualTo("system");
        assertThat(m2.get(1)).isNotEqualTo(m1.get(1));
        // the first 16-token block (64 characters) already tells two sessions, and two system prompts, apart
        assertThat(m2.get(1).content().substring(0, 64)).isNotEqualTo(m1.get(1).content().substring(0, 64));
        String otherSystem = c.messages(otherprompt.id(), 0).get(0).content();
        assertThat(otherSystem.substring(0, 64)).isNotEqualTo(m1.get(0).content().substring(0, 64));
        for (int k = 0; k < 8; k++) {
            assertThat(ChatSessions.tokens(List.of(new Message("system", c.systemPrompt(k)))))
                    .isBetween(1_800, 2_204);
        }
    }

    @Test
    void eachTurnSendsThePreviousTurnWholeThenItsAnswerAndANewMessage() {
        ChatSessions c = new ChatSessions(workload(8), 11, null);
        for (int s = 0; s < 8; s++) {
            int previousTokens = 0;
            String previous = "";
            for (int t = 0; t < 6; t++) {
                List<Message> m = c.messages(s, t);
                assertThat(m).hasSize(2 + 2 * t);
                assertThat(m.get(m.size() - 1).role()).isEqualTo("user");
                if (t > 0) {
                    assertThat(m.get(m.size() - 2).role()).isEqualTo("assistant");
                }
                String rendered = ChatSessions.render(m);
                assertThat(rendered).startsWith(previous);
                int tokens = ChatSessions.tokens(m);
                if (t == 0) {
                    assertThat(tokens).isBetween(1_800 + 90, 2_200 + 110 + 10);
                } else {
                    // one user message (~100) and one answer (~128), ±10%, and 4 tokens each
                    assertThat(tokens - previousTokens).isBetween(90 + 115 + 8 - 1, 110 + 141 + 8 + 1);
                }
                previous = rendered;
                previousTokens = tokens;
            }
        }
    }

    @Test
    void popularityFallsWithTheSystemPromptsRankAndTimesStayInBounds() {
        ChatSessions c = new ChatSessions(workload(4_000), 5, null);
        int[] counts = new int[8];
        long lastStart = -1;
        for (Session s : c.sessions()) {
            counts[s.systemPrompt()]++;
            assertThat(s.startNanos()).isGreaterThanOrEqualTo(lastStart);
            lastStart = s.startNanos();
            assertThat(s.thinkNanos()[0]).isZero();
            for (long think : s.thinkNanos()) {
                assertThat(think).isBetween(0L, 3 * THINK.toNanos());
            }
        }
        // Zipf 1 over 8: weights 1, 1/2 .. 1/8, the first 36.8%, the last 4.6%
        assertThat(counts[0]).isBetween(1_300, 1_650);
        assertThat(counts[7]).isBetween(110, 260);
        assertThat(counts[0]).isGreaterThan(counts[1]).isGreaterThan(counts[3]);
        // 4,000 starts at 2/s take ~2,000 s
        assertThat(lastStart / 1e9).isBetween(1_800.0, 2_200.0);
    }

    @Test
    void theCacheableShareLeavesOutNewMessagesAnswersAndFirstSightings() {
        ChatSessions c = new ChatSessions(workload(64), 1, null);
        long[] bound = c.cacheBound();
        long total = 0;
        for (int s = 0; s < 64; s++) {
            for (int t = 0; t < 6; t++) {
                total += ChatSessions.tokens(c.messages(s, t));
            }
        }
        assertThat(bound[0]).isEqualTo(total);
        // per request ~236 new tokens (user message and previous answer, or the user message alone) of
        // ~2,700, and each system prompt's first sighting: ~89-91% cacheable
        assertThat((double) bound[1] / bound[0]).isBetween(0.86, 0.93);
        ChatSessions single = new ChatSessions(new SessionWorkload(1, 1, 1, 2_000, 100, 128, 1.0, 2.0, THINK), 1, null);
        assertThat(single.cacheBound()[1]).as("one request alone: nothing to find").isZero();
    }

    @Test
    void aWindowCutsTheConversationsThatWouldStartAfterIt() {
        ChatSessions c = new ChatSessions(workload(64), 5, Duration.ofSeconds(10));
        assertThat(c.sessions()).hasSizeBetween(8, 40);
        assertThat(c.sessions()).allMatch(s -> s.startNanos() < 10_000_000_000L);
        assertThat(c.requests()).isEqualTo(c.sessions().size() * 6);
    }

    @Test
    void settingsAreChecked() {
        assertThatThrownBy(() -> new SessionWorkload(0, 6, 8, 2_000, 100, 128, 1.0, 2.0, THINK))
                .hasMessage("--sessions: 0 (expected: >= 1)");
        assertThatThrownBy(() -> new SessionWorkload(4, 6, 8, 2_000, 100, 128, 1.0, 0, THINK))
                .hasMessageStartingWith("--rate: 0.0 (expected: > 0");
    }
}
