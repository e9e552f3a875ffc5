package dev.sluice.gateway.pd;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A fake exchange: records every {@link AttemptEvents} call in order, and decides nothing. Calls
 * arrive on the request's event loop and are read from the test thread, hence the concurrent
 * collections. {@link #pastFirstToken} follows the reported first token as the exchange's does,
 * and a test can make a callback throw to play a gateway bug.
 */
final class RecordingEvents implements AttemptEvents {
    /** One call: its name, the attempt it named, and its argument (a failure, a count, an error, a flag). */
    record Call(String name, AttemptKey attempt, Object arg) {
        @Override
        public String toString() {
            return arg == null ? name : name + "(" + arg + ")";
        }
    }

    private final List<Call> calls = new CopyOnWriteArrayList<>();
    private final Set<AttemptKey> pastFirst = ConcurrentHashMap.newKeySet();
    /** Thrown from {@link #relayed} / {@link #prefillSucceeded} when set: a bug in the exchange's own code. */
    volatile RuntimeException throwOnRelayed;
    volatile RuntimeException throwOnPrefillSucceeded;
    /**
     * Stays true by default (unlike the exchange, which stops asking after the first count) so that a
     * test sees every count a half reads, a misread one included.
     */
    volatile boolean wantsPromptTokens = true;

    private void add(String name, AttemptKey a, Object arg) {
        calls.add(new Call(name, a, arg));
    }

    @Override
    public void prefillSucceeded(AttemptKey a) {
        add("prefillSucceeded", a, null);
        RuntimeException e = throwOnPrefillSucceeded;
        if (e != null) {
            throw e;
        }
    }

    @Override
    public void firstToken(AttemptKey a) {
        pastFirst.add(a);
        add("firstToken", a, null);
    }

    @Override
    public void relayed(AttemptKey a) {
        add("relayed", a, null);
        RuntimeException e = throwOnRelayed;
        if (e != null) {
            throw e;
        }
    }

    @Override
    public void responseEnded(AttemptKey a, boolean clean) {
        add("responseEnded", a, clean ? "clean" : "unclean");
    }

    @Override
    public void failed(AttemptKey a, AttemptFailure f) {
        add("failed", a, f);
    }

    @Override
    public void failedAfterCommit(AttemptKey a, AttemptFailure f) {
        add("failedAfterCommit", a, f);
    }

    @Override
    public void partEnded(AttemptKey a) {
        add("partEnded", a, null);
    }

    @Override
    public void internalError(AttemptKey a, Throwable error) {
        add("internalError", a, error);
    }

    @Override
    public boolean wantsPromptTokens() {
        return wantsPromptTokens;
    }

    @Override
    public void promptTokens(long tokens) {
        add("promptTokens", null, tokens);
    }

    @Override
    public void completionTokens(long tokens) {
        add("completionTokens", null, tokens);
    }

    @Override
    public boolean pastFirstToken(AttemptKey a) {
        return pastFirst.contains(a);
    }

    /** As if the exchange had seen {@code a}'s first token (a half that only reads it, e.g. the prefill). */
    void markPastFirstToken(Attempt a) {
        pastFirst.add(a.key);
    }

    List<Call> calls() {
        return List.copyOf(calls);
    }

    /** The names of the calls in order, token counts left out (they come with every chunk). */
    List<String> names() {
        return calls.stream().filter(c -> !c.name().endsWith("Tokens")).map(Call::name).toList();
    }

    List<Call> named(String name) {
        return calls.stream().filter(c -> c.name().equals(name)).toList();
    }

    long count(String name) {
        return named(name).size();
    }

    List<AttemptFailure> failures(String name) {
        return named(name).stream().map(c -> (AttemptFailure) c.arg()).toList();
    }

    List<Long> counts(String name) {
        return named(name).stream().map(c -> (Long) c.arg()).toList();
    }

    /** The clean flag of the one responseEnded call. */
    Object ended() {
        List<Call> e = named("responseEnded");
        return e.isEmpty() ? null : e.get(e.size() - 1).arg();
    }
}
