package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every simulated server (SGLang prefill and decode, vLLM prefill and decode, unified) has in
 * common: the HTTP listener, the item lifecycle, the journal, faults, prefix cache and counters
 * (requests come in through {@link SimHttpHandler} and {@link RequestIntake}; the role hooks below
 * say which protocol the server speaks; its data-parallel ranks are {@link DpRanks}, its KV event
 * streams {@link KvEventStreams}). All request state lives
 * on one event loop (the server's connections are all registered on it), so it needs no locks;
 * the public accessors are safe from any thread. A server can be {@linkplain #kill() killed} and
 * {@linkplain #restart() restarted} on the same port, as a worker process that dies and comes back.
 */
public abstract class SimWorker {
    private static final Logger log = LoggerFactory.getLogger(SimWorker.class);
    static final int MAX_REQUEST_BYTES = 64 << 20;

    enum Outcome { COMPLETED, ABORTED, FAILED }

    final SimConfig cfg;
    final int ordinal;
    final EventLoop loop;
    final FaultKnobs faults = new FaultKnobs();
    final RequestJournal journal;
    final SimMetrics metrics = new SimMetrics();
    /** Live items, loop-confined. */
    final Set<SimItem> live = new LinkedHashSet<>();
    final LongAdder completed = new LongAdder();
    final LongAdder aborted = new LongAdder();
    final LongAdder failed = new LongAdder();
    final LongAdder kvTransferFailures = new LongAdder();
    final LongAdder bootstrapFailures = new LongAdder();
    final LongAdder workForDeparted = new LongAdder();
    /** Nanoseconds of GPU time spent after the client's give-up time. */
    final LongAdder departedWorkNanos = new LongAdder();
    final LongAdder recomputedPrefills = new LongAdder();
    final LongAdder strandedKv = new LongAdder();
    final LongAdder deprecatedCalls = new LongAdder();
    /**
     * When the server last produced output (a token, a finished prefill), on the nanoTime clock: what
     * SGLang's health check watches ({@code tokenizer_manager.last_receive_tstamp}).
     */
    volatile long lastOutputNanos = System.nanoTime() - (1L << 40);
    final DpRanks ranks = new DpRanks(this);
    final PrefixCaches prefixCache;
    private final KvEventStreams kvEvents;
    volatile long promptTokensProcessed;
    /** Written by the prefill scheduler on the event loop only. */
    volatile long prefillBusyNanos;
    /** KV held for a remote decode after the request was answered (vLLM prefill); published on the loop. */
    volatile int heldKvRequests;
    volatile long heldKvBlocks;
    private volatile int running;
    private volatile int queued;
    private volatile long tokensHeld;
    /** Items accepted under {@code stallAll} (loop-confined); they count as running. */
    int stalledItems;
    private final ServerLifecycle lifecycle = new ServerLifecycle(this);
    private volatile Listener listener;

    SimWorker(SimConfig cfg, int ordinal, EventLoop loop) {
        this.cfg = Objects.requireNonNull(cfg, "cfg");
        this.ordinal = ordinal;
        this.loop = Objects.requireNonNull(loop, "loop");
        this.journal = new RequestJournal(cfg.journalLimit());
        this.prefixCache = new PrefixCaches(cfg.prefixCacheTokens(), cfg.dpSize());
        this.kvEvents = new KvEventStreams(prefixCache);
    }

    // ---- public API ------------------------------------------------------------------------

    public String host() {
        return cfg.host();
    }

    /** The HTTP port; the same while killed and after a restart; -1 before the first bind. */
    public int port() {
        Listener l = listener;
        return l == null ? -1 : l.port();
    }

    public String url() {
        return "http://" + host() + ":" + port();
    }

    /**
     * Starts publishing this server's prefix-cache events on ZMQ PUB sockets (SGLang's
     * {@code --kv-events-config}), one per DP rank bound to {@code endpoint}'s port + rank; returns
     * rank 0's bound endpoint. Port {@code *}: rank 0 takes any free port and the others the ports
     * after it (tried again elsewhere when one of those is taken).
     */
    public String publishKvEvents(String endpoint, String topic) {
        return kvEvents.open(endpoint, topic);
    }

    /** Rank 0's bound KV event endpoint (rank r's is its port + r), if this server publishes its events. */
    public Optional<String> kvEventsEndpoint() {
        return kvEvents.endpoint();
    }

    /** Stops publishing KV events (the cluster's close; a test's publisher that dies). */
    public void closeKvEvents() {
        kvEvents.close();
    }

    public SimConfig config() {
        return cfg;
    }

    public FaultKnobs faults() {
        return faults;
    }

    public List<RecordedRequest> journal() {
        return journal.requests();
    }

    public List<AbortRecord> aborts() {
        return journal.aborts();
    }

    /** The data-parallel rank each recent request (batch item) was given, oldest first. */
    public List<RankAssignment> rankAssignments() {
        return journal.ranks();
    }

    /** Clears the journal, the abort records and the rank assignments (not the counters). */
    public void clear() {
        journal.clear();
    }

    public WorkerStats stats() {
        return new WorkerStats(completed.sum(), aborted.sum(), failed.sum(), kvTransferFailures.sum(),
                bootstrapFailures.sum(), running, queued, promptTokensProcessed, workForDeparted.sum(),
                departedWorkNanos.sum() / 1e9, recomputedPrefills.sum(), strandedKv.sum(), heldKvRequests,
                heldKvBlocks, prefixCache.hitTokens(), prefixCache.queryTokens(), prefillBusyNanos / 1e9,
                deprecatedCalls.sum());
    }

    /** Polls until nothing runs or waits here; false when {@code timeout} passed first. */
    public boolean awaitIdle(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            WorkerStats s = stats();
            if (s.running() == 0 && s.queued() == 0) {
                return true;
            }
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            Thread.sleep(5);
        }
    }

    /**
     * Kills the server as if its process died: stops listening (a prefill's bootstrap port too) and
     * closes every open connection; every live request fails here (counted failed), its queues and
     * timers are released. Idempotent. Safe from any thread: off the server's event loop it
     * returns when the kill is complete (or throws after a few seconds).
     */
    public void kill() {
        lifecycle.kill();
    }

    /**
     * Listens again on the same port(s) after {@link #kill()}; does nothing for a listener that is
     * open. Counters, journal and fault knobs are kept. Safe from any thread: off the server's
     * event loop it returns once bound.
     *
     * @throws IllegalStateException when a port cannot be bound or the cluster is closed
     */
    public void restart() {
        lifecycle.restart();
    }

    /** Whether the server (and a prefill's bootstrap server) is listening: false after {@link #kill()}. */
    public boolean isRunning() {
        return lifecycle.isRunning();
    }

    public abstract boolean isPrefill();

    /** "prefill", "decode" or "unified": the {@code engine_type} label of SGLang's metrics. */
    public String role() {
        return isPrefill() ? "prefill" : "decode";
    }

    /** Whether the server speaks vLLM's HTTP API (routes, errors, metrics) rather than SGLang's. */
    public boolean isVllm() {
        return false;
    }

    /**
     * Requests one data-parallel rank runs at once. SGLang with DP attention divides
     * {@code --max-running-requests} among its ranks ({@code server_args.max_running_requests // dp_size},
     * each rank's scheduler its share: TpModelWorker.__init__, sgl-project/sglang@4f34e24af764d45c2dde4a17cadcdaa7d08a7248
     * python/sglang/srt/managers/tp_worker.py; newer releases do it in model_runner.py and report the share
     * as {@code effective_max_running_requests_per_dp} in each of {@code /server_info}'s {@code internal_states}).
     * SGLang refuses to start when the share is zero; the simulator runs one. The simulated vLLM engines keep
     * today's one cap for the server.
     */
    int runningCapPerRank() {
        return isVllm() ? cfg.decodeMaxBatch() : Math.max(1, cfg.decodeMaxBatch() / cfg.dpSize());
    }

    /** SGLang's {@code disaggregation_mode} in {@code /get_server_info}. */
    String disaggregationMode() {
        return role();
    }

    @Override
    public String toString() {
        return role() + " " + ordinal + " " + (listener == null ? "unbound" : url());
    }

    // ---- lifecycle -------------------------------------------------------------------------

    Channel bind(EventLoopGroup group, int port) throws InterruptedException {
        listener = new Listener(cfg.host(), group, loop, ch -> {
            ch.config().setWriteBufferWaterMark(new WriteBufferWaterMark(32 << 10, 64 << 10));
            ch.pipeline().addLast("codec", new HttpServerCodec())
                    .addLast("aggregator", new HttpObjectAggregator(MAX_REQUEST_BYTES))
                    .addLast("sim", new SimHttpHandler(this));
        });
        return listener.bind(port).sync().channel();
    }

    /** The current (or, while killed, last) listening channel; null before the first bind. */
    Channel serverChannel() {
        Listener l = listener;
        return l == null ? null : l.serverChannel();
    }

    /** Every listener of the server, closed by a kill and bound again by a restart. */
    List<Listener> listeners() {
        Listener l = listener;
        return l == null ? List.of() : List.of(l);
    }

    /** After a kill ended every item: the role drops what a dead process forgets (event loop). */
    abstract void killed();

    /** Whether generation makes no progress here, so that {@code /health_generate} never answers. */
    boolean generationStalled() {
        return faults.stallAll() || (!isPrefill() && faults.stallAfterTokens() >= 0);
    }

    /** How long a one-token generation takes here: the time {@code /health_generate} needs. */
    long oneTokenNanos() {
        double nanos = isPrefill() ? 1e9 / cfg.prefillTokensPerSecond() : cfg.decodeStep().toNanos();
        return (long) (nanos * faults.slowFactor());
    }

    // ---- role hooks (event loop) -----------------------------------------------------------

    /** Refuses (400) a parsed request this role cannot serve. SGLang PD roles need a room per item. */
    void validate(GenerationRequest request) throws GenerationRequest.BadRequest {
        for (GenerationRequest.Item item : request.items()) {
            if (item.room() == null) {
                throw new GenerationRequest.BadRequest("bootstrap_room is required in disaggregation mode ("
                        + role() + "); rid=" + item.rid());
            }
        }
    }

    /** The id the server gives a request from its {@code X-Request-Id} (may be null); null: the body's rid. */
    String requestId(Route route, String header) {
        return null;
    }

    /** The body of an error answer (not mid-stream): SGLang's flat shape unless the role says otherwise. */
    ObjectNode errorBody(int status, String type, String message) {
        return Responses.error(status, type, message);
    }

    /** {@code GET /metrics}: SGLang's names unless the role says otherwise (event loop). */
    String renderMetrics() {
        return metrics.render(this, ranks.loads());
    }

    /** The server produced output now (a token, a computed prompt): a health check in progress passes. */
    final void outputProduced() {
        lastOutputNanos = System.nanoTime();
    }

    /** Role hook: counts a live (not stalled) item in its rank's gauges ({@link DpRanks#loads}). */
    abstract void classify(SimItem item, SimMetrics.RankLoad r);

    /** Role hook: KV held outside the live items (a vLLM prefill's answered legs). */
    void addHeld(SimMetrics.RankLoad[] ranks) {
    }

    /** Accepts the items of a validated generation request. */
    abstract void admit(Exchange ex);

    /** Takes an ending item out of every queue and timer of the role. */
    abstract void release(SimItem item);

    abstract int runningCount();

    abstract int queuedCount();

    abstract long tokensHeldNow();

    abstract void addServerInfo(ObjectNode info);

    void onWritable(Exchange ex) {
    }

    // ---- item lifecycle (event loop) -------------------------------------------------------

    /**
     * A unit of the item's work begins at {@code now}; {@code first}: its first prefill slice or
     * first decode step. Counted once when that first unit begins after its client gave up, or
     * when any unit begins while its connection is closed (no one can receive the result).
     */
    final void workStarting(SimItem item, long now, boolean first) {
        if (!item.departedCounted && ((first && item.departedAt(now)) || !item.exchange.channel.isActive())) {
            item.departedCounted = true;
            workForDeparted.increment();
        }
    }

    /** GPU time in [from, to] spent on the item; the part after its client gave up is counted. */
    final void workDone(SimItem item, long from, long to) {
        workDone(item, from, to, 1);
    }

    /** As above, for a step shared by {@code sharers} items (a decode batch): the item's share. */
    final void workDone(SimItem item, long from, long to, int sharers) {
        long n = item.departedNanos(from, to);
        if (n > 0) {
            departedWorkNanos.add(n / Math.max(1, sharers));
        }
    }

    /** Ends an item once: releases it, counts the outcome. The caller tells its exchange. */
    final void endItem(SimItem item, Outcome outcome, String finishReason) {
        if (!item.live()) {
            return;
        }
        if (item.state == SimItem.State.STALLED) {
            stalledItems--;
        }
        release(item);
        item.cancelTimer();
        item.state = SimItem.State.ENDED;
        if (item.finishReason == null) {
            item.finishReason = finishReason;
        }
        live.remove(item);
        switch (outcome) {
            case COMPLETED -> completed.increment();
            case ABORTED -> aborted.increment();
            case FAILED -> failed.increment();
            default -> throw new IllegalStateException();
        }
        log.debug("{} ended rid={} room={} outcome={}", role(), item.rid, item.room, outcome);
        publishGauges();
    }

    final void publishGauges() {
        running = runningCount() + stalledItems;
        queued = queuedCount();
        tokensHeld = tokensHeldNow();
    }

    long tokensHeld() {
        return tokensHeld;
    }

    /** Role hook for an item accepted under {@code stallAll} (event loop). */
    void stalled(SimItem item) {
    }
}
