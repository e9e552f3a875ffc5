package dev.sluice.gateway.admission;

import dev.sluice.gateway.routing.RoutingRequest;
import dev.sluice.gateway.routing.Worker;
import java.util.HashSet;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Executor;

/**
 * One request's claim on the gateway's capacity, from admission until it has ended. The
 * controller mutates it under its lock only; its releases are idempotent, so a request that
 * ends twice (a failure racing a disconnect) cannot give capacity back twice.
 */
public final class Ticket {
    /**
     * Longest prompt first, the later arrival first among equals: who gives way under
     * {@code admission.scheduling.shed: longest} (in the review, and at the door when the queue or the
     * token budget is full).
     */
    static final java.util.Comparator<Ticket> LONGEST_FIRST = java.util.Comparator.<Ticket>comparingLong(
            t -> t.tokens).thenComparingLong(t -> t.arrival).reversed();

    enum State { NEW, QUEUED, DISPATCHED, ENDED }

    final String id;
    final long tokens;
    /** Index into admission.priorities; remapped under the admission lock when a reload changes the classes. */
    volatile int priority;
    final String tenant;
    final long deadlineNanos;
    final Executor executor;
    final TicketListener listener;
    long enqueuedNanos;
    /** While queued: when its wait ends ({@link #queueDeadline}), and its place in the queue's {@link DeadlineHeap}. */
    long waitDeadline;
    int deadlineIndex = -1;
    /** Its place among tickets of equal deadline (arrival order), given when it is queued. */
    long arrival;
    /** 0, or for a retry put back at the front of its queue, its place there (the latest retry, the lowest). */
    long frontRank;
    /**
     * It has waited {@code admission.scheduling.shed_commit_after} (or it is a retry): it no longer gives
     * way to later arrivals ({@link PriorityQueues#commitDue}). Set under the admission lock, never cleared.
     */
    boolean committed;
    boolean rateCharged; // its prompt tokens went to the tenant's token rate (at its first dispatch)
    State state = State.NEW;
    Worker prefill;
    Worker decode;
    /** The data-parallel ranks of its pair it holds ({@link RankWindows}); read by the exchange after the grant. */
    volatile dev.sluice.gateway.routing.RankChoice ranks = dev.sluice.gateway.routing.RankChoice.NONE;
    boolean prefillReleased;
    long dispatchedNanos;
    /** When its prefill should be done, predicted at dispatch (0: no prediction); see {@link PredictionSlack}. */
    long predictedPrefillDoneNanos;
    /** Prompt tokens in the prefill's window (this request's included) when it was dispatched. */
    long windowTokensAtDispatch;
    /** Its prompt's blocks for prefix affinity per data-parallel rank ({@link RankAffinity}), set before submit. */
    long[] rankBlocks = RankAffinity.NONE;
    /** What routing sees of the request (its rendered prompt, for prefix affinity), set before submit. */
    RoutingRequest routing;
    /** Short enough to skip the prefill hop (routing.direct_decode_max_tokens): sent to a decode alone. */
    boolean direct;
    /**
     * Tokens the client waits for before it sees a first byte beyond the first token: a non-streamed
     * request's {@code max_tokens} (its whole answer comes at once), 0 for a stream.
     */
    long answerTokens;
    /** A streamed request (its decode's first token is seen): set before submit. */
    boolean stream;
    /**
     * While its stream awaits its decode's first token, the slot {@link DecodeStarts} counts it in; -1 otherwise.
     * Written under the admission lock; read without it by the exchange only to skip the lock when -1.
     */
    volatile int decodeStartSlot = -1;
    /** Workers where an earlier attempt of this request failed: picked again only when nothing else fits. */
    Set<Worker> avoid = Set.of();
    /** It has waited for the prefill worker holding its prefix (counted once: {@code affinity_wait}). */
    boolean affinityWaited;
    /** Its prompt tokens its prefill worker was expected to compute (not find cached), while in that worker's window. */
    long uncachedHeld;
    /** Told where it stands while queued (a client that asked for queue updates), or null. */
    QueueWatch watch;

    /**
     * @param deadlineNanos absolute {@code System.nanoTime()} deadline of the client, or {@code Long.MAX_VALUE}
     */
    public Ticket(String id, long tokens, int priority, String tenant, long deadlineNanos, Executor executor,
                  TicketListener listener) {
        this.id = Objects.requireNonNull(id, "id");
        this.tokens = tokens;
        this.priority = priority;
        this.tenant = Objects.requireNonNull(tenant, "tenant");
        this.deadlineNanos = deadlineNanos;
        this.executor = Objects.requireNonNull(executor, "executor");
        this.listener = Objects.requireNonNull(listener, "listener");
        this.routing = new RoutingRequest("", tokens);
    }

    /** The ranks of its granted pair, {@link dev.sluice.gateway.routing.RankChoice#NONE} for workers routed whole. */
    public dev.sluice.gateway.routing.RankChoice ranks() {
        return ranks;
    }

    public String id() {
        return id;
    }

    public long tokens() {
        return tokens;
    }

    /**
     * Sets the rendered prompt routing matches prefixes on. Called on the event loop before submit,
     * so the copy of a long prompt into the tree's form is not paid under the admission lock.
     */
    public Ticket prefixKey(String key) {
        this.routing = new RoutingRequest(key, tokens);
        this.rankBlocks = RankAffinity.blocks(key);
        return this;
    }

    /**
     * As {@link #prefixKey}, with the prompt's token ids for the workers' KV event view (computed on
     * the event loop too; empty when that view is off).
     */
    public Ticket prefix(String key, int[] promptIds) {
        this.routing = new RoutingRequest(key, tokens, promptIds);
        this.rankBlocks = RankAffinity.blocks(key);
        return this;
    }

    /** A non-streamed request of up to {@code maxTokens} tokens: its client sees nothing before the last. */
    public Ticket wholeAnswer(long maxTokens) {
        this.answerTokens = Math.max(0, maxTokens);
        return this;
    }

    /**
     * As {@link #wholeAnswer(long)} for {@code samples} answers of up to {@code maxTokens} tokens
     * each (the request's {@code n}): their product, at most {@link Long#MAX_VALUE}.
     */
    public Ticket wholeAnswer(long maxTokens, int samples) {
        long product;
        try {
            product = Math.multiplyExact(Math.max(0, maxTokens), Math.max(1, samples));
        } catch (ArithmeticException e) {
            product = Long.MAX_VALUE;
        }
        return wholeAnswer(product);
    }

    /** Someone to tell where it stands while it is queued (set before submit). */
    public Ticket watch(QueueWatch w) {
        this.watch = w;
        return this;
    }

    /** A streamed request: its decode's first token is reported ({@link AdmissionController#decodeStarted}). */
    public Ticket streamed(boolean stream) {
        this.stream = stream;
        return this;
    }

    /** Whether its stream is counted as awaiting its decode's first token (then the exchange reports it). */
    public boolean awaitsDecodeStart() {
        return decodeStartSlot >= 0;
    }

    /** Marks a short prompt that skips the prefill hop: a decode worker prefills it itself. */
    public Ticket direct(boolean direct) {
        this.direct = direct;
        return this;
    }

    /** The client's absolute deadline ({@code System.nanoTime()}), or {@code Long.MAX_VALUE}. */
    public long deadlineNanos() {
        return deadlineNanos;
    }

    public int priority() {
        return priority;
    }

    public String tenant() {
        return tenant;
    }

    /**
     * When waiting stops being useful for a ticket queued at {@code enqueuedNanos}: the client's own
     * deadline ({@code X-Sluice-Deadline-Ms}) when it sent one, else {@code admission.queue_timeout}
     * later. A client that says how long it will wait is taken at its word, longer or shorter than
     * the operator's default: serving a patient client is goodput, and refusing an impatient one
     * early saves the GPU work it would leave behind.
     */
    long queueDeadline(long enqueuedNanos, long queueTimeoutNanos) {
        return deadlineNanos != Long.MAX_VALUE ? deadlineNanos : Nanos.plus(enqueuedNanos, queueTimeoutNanos);
    }

    void avoid(Worker w) {
        if (w != null) {
            if (avoid.isEmpty()) {
                avoid = new HashSet<>();
            }
            avoid.add(w);
        }
    }

    /** Time spent queued (so far, or until dispatch). */
    public long queuedNanos() {
        return (dispatchedNanos == 0 ? System.nanoTime() : dispatchedNanos) - enqueuedNanos;
    }

    @Override
    public String toString() {
        return "Ticket[" + id + " tokens=" + tokens + " priority=" + priority + " tenant=" + tenant + " " + state + "]";
    }
}
