package dev.sluice.testbed.sim;

import io.netty.channel.Channel;
import java.util.concurrent.ScheduledFuture;

/**
 * One request item inside a server (a batch of n is n items). Confined to the server's event loop.
 */
final class SimItem {
    enum State { NEW, QUEUED, PREFILLING, KV_HELD, WAITING_KV, DECODE_QUEUED, DECODING, ENDED }

    final Exchange exchange;
    final int index;
    final String rid;
    final long room;
    final String bootstrapHost;
    final int bootstrapPort;
    final int promptTokens;
    final int maxTokens;

    State state = State.NEW;
    /** Prompt tokens the prefill still has to compute. */
    double remainingPrefill;
    int generated;
    final StringBuilder text = new StringBuilder();
    /** "length", "abort"; null while running. */
    String finishReason;
    long firstTokenNanos;
    /** Timer of the current wait (KV wait on a decode, bootstrap timeout on a prefill). */
    ScheduledFuture<?> timer;
    /** The decode's connection to the prefill's bootstrap server while it waits for KV. */
    Channel kvChannel;
    boolean departedCounted;
    /** A decode pump task is queued on the event loop (decodeStep zero). */
    boolean pumpScheduled;

    SimItem(Exchange exchange, GenerationRequest.Item spec) {
        this.exchange = exchange;
        this.index = spec.index();
        this.rid = spec.rid();
        this.room = spec.room();
        this.bootstrapHost = spec.bootstrapHost();
        this.bootstrapPort = spec.bootstrapPort();
        this.promptTokens = spec.promptTokens();
        this.maxTokens = spec.maxTokens();
        this.remainingPrefill = spec.promptTokens();
    }

    boolean live() {
        return state != State.ENDED;
    }

    void cancelTimer() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }

    /** Text of the token with this 0-based index. */
    static String token(int i) {
        return " t" + i;
    }

    /** A deterministic token id for position i. */
    static int tokenId(int i) {
        return 1000 + (i % 30000);
    }

    static double logprob(int i) {
        return -0.01 * (1 + (i % 50));
    }

    @Override
    public String toString() {
        return "rid=" + rid + " room=" + room + " state=" + state;
    }
}
