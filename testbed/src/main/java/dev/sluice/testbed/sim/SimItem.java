package dev.sluice.testbed.sim;

import io.netty.channel.Channel;
import java.util.concurrent.ScheduledFuture;

/**
 * One request item inside a server (a batch of n is n items). Confined to the server's event loop.
 */
final class SimItem {
    /** STALLED: accepted under {@code stallAll}, in no queue, waiting for an abort or its client to leave. */
    enum State { NEW, QUEUED, PREFILLING, KV_HELD, WAITING_KV, DECODE_QUEUED, DECODING, STALLED, ENDED }

    final Exchange exchange;
    final int index;
    final String rid;
    /** The bootstrap room; -1 for a request without one (vLLM, unified servers). */
    final long room;
    final String bootstrapHost;
    final int bootstrapPort;
    final int promptTokens;
    final int maxTokens;
    /** The prompt's prefix-cache blocks. */
    final long[] prefix;
    /** The token ids of those blocks (what a KV event carries). */
    final int[] blockTokens;
    /** Index among the n parallel samples of its prompt (0 when n = 1). */
    final int sample;

    State state = State.NEW;
    /** Prompt tokens the prefill still has to compute. */
    double remainingPrefill;
    /** Prompt tokens the prefix cache served when the prefill started. */
    int cachedTokens;
    int generated;
    final StringBuilder text = new StringBuilder();
    /** "length", "abort"; null while running. */
    String finishReason;
    long firstTokenNanos;
    /** Timer of the current wait (KV wait on a decode, bootstrap timeout on a prefill). */
    ScheduledFuture<?> timer;
    /** The decode's connection to the prefill's bootstrap server (or KV side channel) while it waits for KV. */
    Channel kvChannel;
    /** Counted once in {@code workForDepartedClients}. */
    boolean departedCounted;
    /**
     * Decode: the first token came after the client's give-up time, so nobody reads this stream.
     * (The give-up time is a first-token deadline: a client that got its first token in time stays.)
     */
    boolean firstTokenLate;
    /** When the client gives up, on the {@link System#nanoTime()} clock; {@link Long#MAX_VALUE}: never. */
    final long giveUpNanos;
    /** A decode pump task is queued on the event loop (decodeStep zero). */
    boolean pumpScheduled;
    /** The data-parallel rank serving the item ({@link DpDispatch#assign}). */
    int dpRank;
    /** A PD decode's item: the prefill rank it fetches its KV from ({@link DpDispatch}); -1 otherwise. */
    int prefillDpRank = -1;
    /** Why the server aborted the item (FINISH_ABORT's message), null when it was not aborted by the server. */
    String abortMessage;
    /** FINISH_ABORT's status_code, null when the abort carries none (an /abort_request). */
    Integer abortStatus;

    SimItem(Exchange exchange, GenerationRequest.Item spec) {
        this.exchange = exchange;
        this.index = spec.index();
        this.rid = spec.rid();
        this.room = spec.room() == null ? -1 : spec.room();
        this.bootstrapHost = spec.bootstrapHost();
        this.bootstrapPort = spec.bootstrapPort();
        this.promptTokens = spec.promptTokens();
        this.maxTokens = spec.maxTokens();
        this.prefix = spec.prefix();
        this.blockTokens = spec.blockTokens();
        this.sample = spec.sample();
        this.remainingPrefill = spec.promptTokens();
        long givesUpAtMs = exchange.request.clientGivesUpAtMs();
        this.giveUpNanos = givesUpAtMs <= 0 ? Long.MAX_VALUE
                : exchange.receivedNanos + (givesUpAtMs - exchange.receivedEpochMillis) * 1_000_000L;
    }

    /** Whether the client had already given up at {@code nanos}. */
    boolean departedAt(long nanos) {
        return nanos - giveUpNanos > 0 && giveUpNanos != Long.MAX_VALUE;
    }

    /** Nanoseconds of the interval [from, to] that lie after the client gave up. */
    long departedNanos(long from, long to) {
        if (giveUpNanos == Long.MAX_VALUE) {
            return 0;
        }
        long start = from - giveUpNanos > 0 ? from : giveUpNanos;
        return Math.max(0, to - start);
    }

    boolean live() {
        return state != State.ENDED;
    }

    /** Stops a KV fetch in flight: its answer, if any, is then ignored. */
    void closeKvChannel() {
        Channel ch = kvChannel;
        kvChannel = null;
        if (ch != null) {
            ch.close();
        }
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
