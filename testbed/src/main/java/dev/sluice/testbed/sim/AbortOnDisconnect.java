package dev.sluice.testbed.sim;

import java.util.Locale;

/**
 * When a simulated SGLang server (prefill, decode or unified) aborts a request whose client closed
 * its connection. vLLM servers always abort at once (their HTTP layer cancels the request when the
 * connection closes), whatever this says.
 */
public enum AbortOnDisconnect {
    /**
     * What a real SGLang server does ({@link DisconnectWatch}): a stream whose response has started is
     * aborted 2 s after the disconnect (the StreamingResponse's background {@code create_abort_task});
     * a non-streamed request, or an OpenAI stream before its first output, at the next
     * {@code request.is_disconnected()} check of {@code _wait_one_response}: when 4 s pass with no
     * output ({@code SGLANG_REQUEST_STATE_WAIT_TIMEOUT}), or, non-streamed, at an intermediate output
     * (every {@code DEFAULT_FORCE_STREAM_INTERVAL} = 50 tokens).
     */
    SGLANG,
    /** The moment the connection closes (the simulator's historical behaviour; vLLM's rule). */
    IMMEDIATE,
    /** Never: the request runs to its end and its output goes nowhere. */
    NEVER;

    /** Parses {@code sglang}, {@code immediate} or {@code never}. */
    public static AbortOnDisconnect parse(String s) {
        try {
            return valueOf(s.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("abortOnDisconnect: " + s + " (expected: sglang, immediate or never)");
        }
    }

    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
