package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a simulated prefill and a simulated decode server have in common: the HTTP listener, the
 * info and admin routes, abort handling, the journal, faults and counters. All request state lives
 * on one event loop (the server's connections are all registered on it), so it needs no locks;
 * the public accessors are safe from any thread.
 */
public abstract class SimWorker {
    private static final Logger log = LoggerFactory.getLogger(SimWorker.class);
    static final int MAX_REQUEST_BYTES = 64 << 20;
    static final long MAX_TOTAL_TOKENS = 1 << 20;

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
    volatile long promptTokensProcessed;
    private volatile int running;
    private volatile int queued;
    private volatile long tokensHeld;
    private Channel serverChannel;

    SimWorker(SimConfig cfg, int ordinal, EventLoop loop) {
        this.cfg = Objects.requireNonNull(cfg, "cfg");
        this.ordinal = ordinal;
        this.loop = Objects.requireNonNull(loop, "loop");
        this.journal = new RequestJournal(cfg.journalLimit());
    }

    // ---- public API ------------------------------------------------------------------------

    public String host() {
        return cfg.host();
    }

    public int port() {
        return ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    public String url() {
        return "http://" + host() + ":" + port();
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

    /** Clears the journal and the abort records (not the counters). */
    public void clear() {
        journal.clear();
    }

    public WorkerStats stats() {
        return new WorkerStats(completed.sum(), aborted.sum(), failed.sum(), kvTransferFailures.sum(),
                bootstrapFailures.sum(), running, queued, promptTokensProcessed, workForDeparted.sum(),
                departedWorkNanos.sum() / 1e9);
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

    public abstract boolean isPrefill();

    /** "prefill" or "decode", SGLang's {@code disaggregation_mode}. */
    public String role() {
        return isPrefill() ? "prefill" : "decode";
    }

    @Override
    public String toString() {
        return role() + " " + ordinal + " " + (serverChannel == null ? "unbound" : url());
    }

    // ---- lifecycle -------------------------------------------------------------------------

    Channel bind(EventLoopGroup group, int port) throws InterruptedException {
        serverChannel = new ServerBootstrap().group(group, loop).channel(Transport.serverChannel())
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(32 << 10, 64 << 10))
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast("codec", new HttpServerCodec())
                                .addLast("aggregator", new HttpObjectAggregator(MAX_REQUEST_BYTES))
                                .addLast("sim", new SimHttpHandler(SimWorker.this));
                    }
                })
                .bind(cfg.host(), port).sync().channel();
        return serverChannel;
    }

    Channel serverChannel() {
        return serverChannel;
    }

    // ---- role hooks (event loop) -----------------------------------------------------------

    /** Accepts the items of a validated generation request. */
    abstract void admit(Exchange ex);

    /** Takes an ending item out of every queue and timer of the role. */
    abstract void release(SimItem item);

    abstract int runningCount();

    abstract int queuedCount();

    abstract long tokensHeldNow();

    abstract SimMetrics.Gauges gauges();

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
        running = runningCount();
        queued = queuedCount();
        tokensHeld = tokensHeldNow();
    }

    long tokensHeld() {
        return tokensHeld;
    }

    // ---- HTTP (event loop) -----------------------------------------------------------------

    void generation(SimHttpHandler handler, Channel ch, Route route, JsonNode body, boolean keepAlive,
                            long now) {
        int failStatus = faults.failStatus();
        if (failStatus > 0) {
            Responses.json(ch, failStatus, Responses.error(failStatus, Responses.errorType(failStatus),
                    "simulated failure"), keepAlive);
            return;
        }
        GenerationRequest request;
        try {
            request = GenerationRequest.parse(route, body, cfg.defaultMaxTokens());
            for (GenerationRequest.Item item : request.items()) {
                if (item.room() == null) {
                    throw new GenerationRequest.BadRequest("bootstrap_room is required in disaggregation mode ("
                            + role() + "); rid=" + item.rid());
                }
            }
        } catch (GenerationRequest.BadRequest e) {
            log.info("{} {} rejected path={}: {}", role(), ordinal, route.path, e.getMessage());
            Responses.json(ch, 400, Responses.error(400, "BadRequestError", e.getMessage()), keepAlive);
            return;
        }
        Exchange ex = new Exchange(this, ch, request, keepAlive, now);
        handler.current = ex;
        live.addAll(ex.items);
        ex.begin();
        admit(ex);
        publishGauges();
    }

    void abortRequest(Channel ch, JsonNode body, boolean keepAlive, long now) {
        boolean all = body != null && body.path("abort_all").asBoolean(false);
        String rid = all ? "*" : body == null ? "" : body.path("rid").asText("");
        List<SimItem> matched = new ArrayList<>();
        for (SimItem item : live) {
            if (all || item.rid.equals(rid) || item.exchange.request.rid().equals(rid)) {
                matched.add(item);
            }
        }
        for (SimItem item : matched) {
            if (item.live()) {
                endItem(item, Outcome.ABORTED, "abort");
                item.exchange.itemEnded(item);
            }
        }
        log.info("{} {} abort rid={} matched={}", role(), ordinal, rid, matched.size());
        journal.record(new AbortRecord(rid, now, !matched.isEmpty()));
        Responses.json(ch, 200, JsonNodeFactory.instance.objectNode(), keepAlive);
    }
}
