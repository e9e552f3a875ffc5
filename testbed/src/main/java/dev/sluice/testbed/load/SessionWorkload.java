package dev.sluice.testbed.load;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.Objects;

/**
 * The settings of the {@code chat-sessions} workload ({@link ChatSessions}): multi-turn
 * conversations over a few shared system prompts, the traffic a prefix cache and cache-aware
 * routing are for.
 *
 * @param sessions           conversations to run
 * @param turns              requests per conversation
 * @param systemPrompts      distinct system prompts the conversations share
 * @param systemPromptTokens size of each system prompt (±10%)
 * @param userTokens         size of each new user message (±10%)
 * @param replyTokens        size of the stand-in assistant reply that later turns carry (±10%)
 * @param zipf               exponent of the system prompts' popularity: prompt k is picked with weight
 *                           1 / (k + 1)^zipf (0: all alike)
 * @param sessionRate        conversations started per second (Poisson)
 * @param thinkTime          mean pause between an answer's end and the next turn (exponential, at most
 *                           {@value ChatSessions#THINK_CAP} times the mean)
 */
public record SessionWorkload(int sessions, int turns, int systemPrompts, int systemPromptTokens, int userTokens,
                              int replyTokens, double zipf, double sessionRate, Duration thinkTime) {

    public SessionWorkload {
        Objects.requireNonNull(thinkTime, "thinkTime");
        check(sessions >= 1, "--sessions", sessions, ">= 1");
        check(turns >= 1, "--turns", turns, ">= 1");
        check(systemPrompts >= 1, "--system-prompts", systemPrompts, ">= 1");
        check(systemPromptTokens >= 1, "--system-prompt-tokens", systemPromptTokens, ">= 1");
        check(userTokens >= 1, "--user-tokens", userTokens, ">= 1");
        check(replyTokens >= 1, "--reply-tokens", replyTokens, ">= 1");
        check(zipf >= 0, "--zipf", zipf, ">= 0");
        check(sessionRate > 0, "--rate", sessionRate, "> 0, conversations started per second");
        check(!thinkTime.isNegative(), "--think-time", thinkTime, ">= 0");
    }

    private static void check(boolean ok, String name, Object value, String expected) {
        if (!ok) {
            throw new IllegalArgumentException(name + ": " + value + " (expected: " + expected + ")");
        }
    }

    ObjectNode toJson() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("name", "chat-sessions");
        o.put("sessions", sessions);
        o.put("turns", turns);
        o.put("system_prompts", systemPrompts);
        o.put("system_prompt_tokens", systemPromptTokens);
        o.put("user_tokens", userTokens);
        o.put("reply_tokens", replyTokens);
        o.put("zipf", zipf);
        o.put("session_rate", sessionRate);
        o.put("think_time_ms", thinkTime.toMillis());
        return o;
    }
}
