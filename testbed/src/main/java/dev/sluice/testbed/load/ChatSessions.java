package dev.sluice.testbed.load;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The plan of a {@code chat-sessions} run, a function of its {@link SessionWorkload} and seed only:
 * conversations that start at Poisson times, each on one of a few shared system prompts (picked
 * with Zipf popularity), and go on for a number of turns. Turn t sends the system prompt, every
 * earlier turn (the user message and a stand-in for the assistant's answer) and a new user
 * message, so each turn's prompt begins with the whole previous one: what a chat client sends,
 * and what a prefix cache serves. The stand-in answer (not the text the server streamed) keeps the
 * prompts the same whatever the servers do, so runs with one seed are comparable.
 *
 * <p>Texts are seeded random words at ~4 bytes per token ({@link Prompts#BYTES_PER_TOKEN}), each
 * starting with a header naming what it is (system prompt k, session s turn t), so two texts that
 * should differ differ from their first 16-token block on.
 */
final class ChatSessions {
    /** A think time is at most this many times the mean: one slow reader must not stretch a run. */
    static final int THINK_CAP = 3;
    private static final int SYSTEM = 1;
    private static final int USER = 2;
    private static final int REPLY = 3;
    private static final int SESSION = 4;
    /** The simulator's prefix cache block (PrefixCache, PromptBlocks), in tokens and in characters. */
    private static final int BLOCK_TOKENS = 16;
    private static final int BLOCK_CHARS = BLOCK_TOKENS * Prompts.BYTES_PER_TOKEN;

    /** One chat message. */
    record Message(String role, String content) {
    }

    /**
     * One conversation.
     *
     * @param startNanos  its first turn's send time, from the run's start
     * @param thinkNanos  {@code thinkNanos[t]}: pause between the end of turn t - 1 and the send of turn t
     *                    ({@code thinkNanos[0]} is 0)
     */
    record Session(int id, int systemPrompt, long startNanos, long[] thinkNanos) {
    }

    private final SessionWorkload workload;
    private final long seed;
    private final List<Session> sessions;
    private final String[] systemPrompts;

    /** {@code window}: sessions that would start later are not run (null: no bound). */
    ChatSessions(SessionWorkload workload, long seed, Duration window) {
        this.workload = workload;
        this.seed = seed;
        long[] starts = Arrivals.offsetsNanos(LoadSpec.Arrival.POISSON, 0, workload.sessionRate(), workload.sessions(),
                window, seed);
        double[] cumulative = zipfCumulative(workload.systemPrompts(), workload.zipf());
        List<Session> out = new ArrayList<>(starts.length);
        for (int s = 0; s < starts.length; s++) {
            SplittableRandom r = random(seed, SESSION, s, 0);
            int prompt = pick(cumulative, r.nextDouble());
            long[] think = new long[workload.turns()];
            double mean = workload.thinkTime().toNanos();
            for (int t = 1; t < think.length; t++) {
                think[t] = (long) Math.min(THINK_CAP * mean, -Math.log(1 - r.nextDouble()) * mean);
            }
            out.add(new Session(s, prompt, starts[s], think));
        }
        this.sessions = List.copyOf(out);
        this.systemPrompts = new String[workload.systemPrompts()];
        for (int k = 0; k < systemPrompts.length; k++) {
            systemPrompts[k] = Prompts.text(random(seed, SYSTEM, k, 0), "System prompt " + k
                    + ". You are a helpful assistant. ", workload.systemPromptTokens());
        }
    }

    List<Session> sessions() {
        return sessions;
    }

    int turns() {
        return workload.turns();
    }

    /** Requests of the whole run: every turn of every session. */
    int requests() {
        return sessions.size() * workload.turns();
    }

    /** The request index of a turn: session x turns + turn (the per-request report shows both). */
    int index(int session, int turn) {
        return session * workload.turns() + turn;
    }

    String systemPrompt(int k) {
        return systemPrompts[k];
    }

    /** The messages turn {@code turn} of session {@code session} sends. */
    List<Message> messages(int session, int turn) {
        Session s = sessions.get(session);
        List<Message> out = new ArrayList<>(2 + 2 * turn);
        out.add(new Message("system", systemPrompts[s.systemPrompt()]));
        for (int t = 0; t < turn; t++) {
            out.add(new Message("user", userMessage(session, t)));
            out.add(new Message("assistant", reply(session, t)));
        }
        out.add(new Message("user", userMessage(session, turn)));
        return out;
    }

    private String userMessage(int session, int turn) {
        return Prompts.text(random(seed, USER, session, turn), "Session " + session + ", turn " + turn + ". ",
                workload.userTokens());
    }

    private String reply(int session, int turn) {
        return Prompts.text(random(seed, REPLY, session, turn), "Answer " + session + "." + turn + ": ",
                workload.replyTokens());
    }

    /**
     * Prompt tokens of the whole run, and the most of them any placement could serve from prefix
     * caches: what one unbounded cache would hold, in the simulator's blocks of 16 tokens (64
     * characters of the prompt rendered {@code role: content}, a line a message). A later turn can
     * find at most its previous turn (the answer was generated on a decode server, which no prefill
     * saw); a first turn, at most what it shares with an earlier conversation on its system prompt.
     * {@code [promptTokens, cacheableTokens]}.
     */
    long[] cacheBound() {
        long total = 0;
        long cacheable = 0;
        java.util.Map<Integer, List<String>> firstTurns = new java.util.HashMap<>();
        for (Session s : sessions) {
            String previous = null;
            for (int t = 0; t < workload.turns(); t++) {
                List<Message> m = messages(s.id(), t);
                int tokens = tokens(m);
                String rendered = render(m);
                long common = 0;
                if (previous != null) {
                    common = previous.length();
                } else {
                    List<String> earlier = firstTurns.computeIfAbsent(s.systemPrompt(), k -> new ArrayList<>());
                    for (String e : earlier) {
                        common = Math.max(common, commonPrefix(e, rendered));
                    }
                    earlier.add(rendered);
                }
                total += tokens;
                cacheable += Math.min(tokens - 1, common / BLOCK_CHARS * BLOCK_TOKENS);
                previous = rendered;
            }
        }
        return new long[] {total, cacheable};
    }

    /** The chat as the simulator hashes it for its prefix cache: {@code role: content}, a line a message. */
    static String render(List<Message> messages) {
        StringBuilder b = new StringBuilder();
        messages.forEach(m -> b.append(m.role()).append(": ").append(m.content()).append('\n'));
        return b.toString();
    }

    private static int commonPrefix(String a, String b) {
        int n = Math.min(a.length(), b.length());
        int i = 0;
        while (i < n && a.charAt(i) == b.charAt(i)) {
            i++;
        }
        return i;
    }

    /** Prompt tokens of some messages as the simulator counts them: UTF-8 bytes / 4, plus 4 a message. */
    static int tokens(List<Message> messages) {
        long bytes = 0;
        for (Message m : messages) {
            bytes += m.content().getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        }
        return (int) ((bytes + 3) / 4) + 4 * messages.size();
    }

    /** Cumulative popularity of prompts 0..n-1, prompt k weighing 1 / (k + 1)^s. */
    static double[] zipfCumulative(int n, double s) {
        double[] c = new double[n];
        double sum = 0;
        for (int k = 0; k < n; k++) {
            sum += 1 / Math.pow(k + 1, s);
            c[k] = sum;
        }
        for (int k = 0; k < n; k++) {
            c[k] /= sum;
        }
        return c;
    }

    private static int pick(double[] cumulative, double u) {
        for (int k = 0; k < cumulative.length; k++) {
            if (u < cumulative[k]) {
                return k;
            }
        }
        return cumulative.length - 1;
    }

    /** An independent stream per (seed, kind, a, b): SplittableRandom seeds a step apart would overlap. */
    private static SplittableRandom random(long seed, int kind, int a, int b) {
        long h = mix(seed ^ 0x5EEDL);
        h = mix(h + kind);
        h = mix(h + a);
        h = mix(h + b);
        return new SplittableRandom(h);
    }

    /** SplitMix64's finalizer. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
