package dev.sluice.gateway.cacheview;

import dev.sluice.gateway.routing.Worker;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * Subscribes to the prefill workers' KV event publishers (ZMQ SUB, SGLang's and vLLM's
 * {@code [topic, seq, payload]} frames), one stream per worker and DP rank, on one thread of its
 * own, {@code sluice-kv-events}, which owns the ZMQ context and every socket; each frame is decoded
 * and applied to the worker's {@link WorkerBlocks} by {@link KvEventFrames}. Never an event loop,
 * never the admission lock.
 *
 * <p>Sequence numbers, per stream: a jump forward is a gap (batches lost: the rank's blocks are
 * forgotten and the worker's view is stale while it fills again); a jump back is a publisher that
 * restarted (its cache is new: the rank's blocks are cleared).
 *
 * <p>Silence: a JeroMQ SUB connection can come up dead (the TCP connection established, the
 * publisher's greeting never read, nothing ever delivered; docs/cache-affinity.md). A stream that
 * says nothing for {@code resubscribeAfter} while its worker was sent work that should have
 * stored blocks is closed and opened again, logged and counted.
 *
 * <p>Membership follows the worker list ({@link #follow}): the wanted streams are handed over
 * through an atomic reference and the thread opens and closes sockets to match.
 *
 * <p>Each stream stands alone: its host is looked up off this thread, a stream that
 * cannot be opened is retried with its own exponential backoff (ZMQ backs off the same way while a
 * publisher refuses or is gone), a frame that cannot be read is counted as malformed and skipped,
 * and a failure in one stream closes that stream only. Each change of a stream's state is logged
 * once (subscribing, up, down, failed), not each retry; {@link WorkerBlocks#up} says which are
 * connected.
 */
public final class KvEventSubscriber implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(KvEventSubscriber.class);

    /** SGLang's and vLLM's batches are a few KiB to a few hundred; a frame past this is refused. */
    public static final long DEFAULT_MAX_MESSAGE_SIZE = 4L << 20;
    /** Frames read from one stream per turn, so that a flooding publisher cannot starve the others. */
    private static final int FRAMES_PER_TURN = 1_000;

    private final CacheView view;
    private final byte[] topic;
    private final long resubscribeAfterNanos;
    private final long maxMessageSize;
    private final KvEventFrames frames;
    /** The streams wanted, per worker its ranks' endpoints; taken by the thread when set. */
    private final AtomicReference<Map<Worker, List<String>>> wanted = new AtomicReference<>();
    /** Name lookups, off the subscriber's thread: a DNS server that hangs holds one stream back, not all. */
    private final ExecutorService resolver = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "sluice-kv-resolve");
        t.setDaemon(true);
        return t;
    });
    private final Thread thread;
    private volatile boolean running = true;

    public KvEventSubscriber(CacheView view, Map<Worker, List<String>> endpoints, String topic,
                             long resubscribeAfterNanos, long rebuildNanos) {
        this(view, endpoints, topic, resubscribeAfterNanos, rebuildNanos, DEFAULT_MAX_MESSAGE_SIZE);
    }

    /**
     * @param endpoints each subscribed worker's event endpoints, one per DP rank in rank order
     *                  ({@code tcp://host:port})
     * @param resubscribeAfterNanos how long a stream may stay silent while its worker is awaited
     * @param rebuildNanos how long a worker's view stays stale after a sequence gap
     * @param maxMessageSize the largest frame read (ZMQ's MAXMSGSIZE); larger ones are dropped
     */
    public KvEventSubscriber(CacheView view, Map<Worker, List<String>> endpoints, String topic,
                             long resubscribeAfterNanos, long rebuildNanos, long maxMessageSize) {
        this.view = Objects.requireNonNull(view, "view");
        this.topic = topic.getBytes(StandardCharsets.UTF_8);
        this.resubscribeAfterNanos = resubscribeAfterNanos;
        this.maxMessageSize = maxMessageSize;
        this.frames = new KvEventFrames(maxMessageSize, rebuildNanos);
        follow(endpoints);
        this.thread = new Thread(this::run, "sluice-kv-events");
        thread.setDaemon(true);
    }

    public void start() {
        thread.start();
    }

    /**
     * The streams to hold from now on: workers not subscribed yet get a view and their streams,
     * workers no longer listed lose both. Any thread; the sockets follow on the subscriber's.
     */
    public void follow(Map<Worker, List<String>> endpoints) {
        Map<Worker, List<String>> copy = new LinkedHashMap<>();
        endpoints.forEach((w, e) -> copy.put(w, List.copyOf(e)));
        view.retain(copy.keySet());
        copy.forEach((w, e) -> view.add(w, e.size()));
        wanted.set(copy);
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t); // it may be idle without streams
        }
    }

    private void run() {
        WatchedContext watched = new WatchedContext();
        try {
            List<EventStream> streams = new ArrayList<>();
            List<EventStream> polled = new ArrayList<>();
            ZMQ.Poller poller = null;
            boolean dirty = true;
            while (running && !Thread.currentThread().isInterrupted()) {
                try {
                    if (watched.renewIfStuck(streams)) {
                        if (poller != null) {
                            poller.close();
                            poller = null;
                        }
                        dirty = true;
                    }
                    ZContext ctx = watched.context();
                    Map<Worker, List<String>> next = wanted.getAndSet(null);
                    if (next != null) {
                        reconcile(ctx, streams, next);
                        dirty = true;
                    }
                    dirty |= openDue(ctx, streams, System.nanoTime());
                    if (dirty || poller == null) {
                        poller = poller(ctx, poller, streams, polled);
                        dirty = false;
                    }
                    if (polled.isEmpty()) {
                        // nothing to poll until follow() hands streams over or a closed one's backoff ends
                        LockSupport.parkNanos(resolving(streams) ? 20_000_000L : 200_000_000L);
                    } else if (poller.poll(resolving(streams) ? 20 : 200) > 0) {
                        dirty |= readPolled(ctx, poller, polled);
                    }
                    dirty |= resubscribeSilent(ctx, streams);
                    dirty |= reopenDropped(ctx, streams);
                    view.fit();
                } catch (Throwable t) {
                    // not one stream's (those are caught per stream and per frame): logged, and the loop goes on
                    log.error("kv events subscriber loop failed error={} (continuing)", t.toString(), t);
                    dirty = true;
                    LockSupport.parkNanos(1_000_000_000L);
                }
            }
            if (poller != null) {
                poller.close();
            }
            for (EventStream s : streams) {
                s.close(watched.context());
            }
        } catch (RuntimeException e) {
            if (running) {
                log.error("kv events subscriber failed error={}", e.toString(), e);
            }
        } finally {
            resolver.shutdownNow();
            watched.close();
        }
    }

    private boolean readPolled(ZContext ctx, ZMQ.Poller poller, List<EventStream> polled) {
        boolean dirty = false;
        for (int i = 0; i < polled.size(); i++) {
            if (!poller.pollin(i)) {
                continue;
            }
            EventStream s = polled.get(i);
            try {
                if (i % 2 == 1) {
                    monitorEvents(s);
                } else {
                    ZMsg m;
                    for (int n = 0; n < FRAMES_PER_TURN && (m = ZMsg.recvMsg(s.socket(), ZMQ.DONTWAIT)) != null; n++) {
                        frames.receiveSafely(s, m);
                    }
                }
            } catch (RuntimeException e) {
                // this stream's socket failed: it alone is closed and opened again after its backoff
                failed(ctx, s, e, System.nanoTime());
                dirty = true;
            }
        }
        return dirty;
    }

    private void monitorEvents(EventStream s) {
        for (ZMQ.Event e; (e = ZMQ.Event.recv(s.monitor(), ZMQ.DONTWAIT)) != null; ) {
            if (e.getEvent() == ZMQ.EVENT_HANDSHAKE_PROTOCOL && s.moveTo(EventStream.State.UP)) {
                log.info("kv events up worker={} rank={} endpoint={}", s.worker.url(), s.rank, s.endpoint);
            } else if (e.getEvent() == ZMQ.EVENT_DISCONNECTED && s.moveTo(EventStream.State.CONNECTING)) {
                s.reopenAtNanos = System.nanoTime() + s.backoff.failed();
                log.warn("kv events down worker={} rank={} endpoint={} (reconnecting, backing off up to {} ms)",
                        s.worker.url(), s.rank, s.endpoint, EventStream.RECONNECT_MAX_MS);
            }
        }
    }

    private void reconcile(ZContext ctx, List<EventStream> streams, Map<Worker, List<String>> next) {
        streams.removeIf(s -> {
            List<String> e = next.get(s.worker);
            boolean gone = e == null || e.size() <= s.rank || !e.get(s.rank).equals(s.endpoint)
                    || view.of(s.worker).orElse(null) != s.blocks;
            if (gone) {
                s.close(ctx);
                log.info("kv events unsubscribed worker={} rank={} endpoint={}", s.worker.url(), s.rank, s.endpoint);
            }
            return gone;
        });
        next.forEach((w, endpoints) -> {
            WorkerBlocks blocks = view.of(w).orElse(null);
            for (int r = 0; r < endpoints.size() && blocks != null; r++) {
                int rank = r;
                if (streams.stream().noneMatch(s -> s.worker.equals(w) && s.rank == rank)) {
                    streams.add(new EventStream(w, rank, endpoints.get(rank), blocks)); // opened by openDue
                }
            }
        });
    }

    /**
     * Opens each closed stream whose backoff is over, once its host name resolved (looked up on
     * {@link #resolver}); a stream that cannot be opened waits twice as long next time. Whether any
     * socket was opened.
     */
    private boolean openDue(ZContext ctx, List<EventStream> streams, long now) {
        boolean opened = false;
        for (EventStream s : streams) {
            if (s.state() != EventStream.State.CLOSED || now - s.retryAtNanos < 0) {
                continue;
            }
            if (s.resolving == null) {
                String host = host(s.endpoint);
                s.resolving = CompletableFuture.runAsync(() -> resolve(host), resolver);
            }
            if (!s.resolving.isDone()) {
                continue;
            }
            CompletableFuture<Void> lookup = s.resolving;
            s.resolving = null;
            try {
                lookup.join();
                s.open(ctx, topic, maxMessageSize, now);
                log.info("kv events subscribing worker={} rank={} endpoint={}", s.worker.url(), s.rank, s.endpoint);
                opened = true;
            } catch (RuntimeException e) {
                failed(ctx, s, e instanceof CompletionException && e.getCause() != null ? e.getCause() : e, now);
            }
        }
        return opened;
    }

    private static void resolve(String host) {
        try {
            InetAddress.getAllByName(host);
        } catch (UnknownHostException e) {
            throw new CompletionException(e);
        }
    }

    /** {@code tcp://host:port} or {@code tcp://[v6]:port}: the host. */
    static String host(String endpoint) {
        String rest = endpoint.substring(endpoint.indexOf("://") + 3);
        String host = rest.substring(0, Math.max(0, rest.lastIndexOf(':')));
        return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    }

    private static boolean resolving(List<EventStream> streams) {
        for (EventStream s : streams) {
            if (s.resolving != null) {
                return true;
            }
        }
        return false;
    }

    /** {@code s} could not be opened or its socket failed: closed, retried after its backoff; logged when the failure changes. */
    private void failed(ZContext ctx, EventStream s, Throwable cause, long now) {
        boolean wasOpen = s.state() != EventStream.State.CLOSED;
        s.close(ctx);
        long wait = s.backoff.failed();
        s.retryAtNanos = now + wait;
        String failure = cause.toString();
        if (wasOpen || !failure.equals(s.lastFailure)) {
            log.warn("kv events stream failed worker={} rank={} endpoint={} error={} (retried with backoff, up to "
                    + "{} ms apart; logged again when the failure changes)", s.worker.url(), s.rank, s.endpoint,
                    failure, EventStream.RECONNECT_MAX_MS);
        }
        s.lastFailure = failure;
    }

    /** A poller over each open stream's socket (even items) and its monitor (odd items), {@code polled} saying whose. */
    private static ZMQ.Poller poller(ZContext ctx, ZMQ.Poller old, List<EventStream> streams, List<EventStream> polled) {
        if (old != null) {
            old.close();
        }
        polled.clear();
        ZMQ.Poller p = ctx.createPoller(Math.max(1, 2 * streams.size()));
        for (EventStream s : streams) {
            if (s.socket() != null) {
                p.register(s.socket(), ZMQ.Poller.POLLIN);
                p.register(s.monitor(), ZMQ.Poller.POLLIN);
                polled.add(s);
                polled.add(s);
            }
        }
        return p;
    }

    /**
     * Opens again each stream disconnected and not back by its backoff: JeroMQ 0.6.0 reconnects by
     * itself after a publisher went away, but not after it dropped a connection for a protocol
     * error such as a frame over MAXMSGSIZE (measured: DISCONNECTED, then no event at all). The
     * backoff doubles while the stream stays down; not logged (the "down" line said it).
     */
    private boolean reopenDropped(ZContext ctx, List<EventStream> streams) {
        long now = System.nanoTime();
        boolean any = false;
        for (EventStream s : streams) {
            if (s.state() == EventStream.State.CONNECTING && s.reopenAtNanos != 0 && now - s.reopenAtNanos >= 0) {
                s.close(ctx);
                try {
                    s.open(ctx, topic, maxMessageSize, now);
                    s.reopenAtNanos = now + s.backoff.failed();
                } catch (RuntimeException e) {
                    failed(ctx, s, e, now);
                }
                any = true;
            }
        }
        return any;
    }

    /** Opens again each stream silent while its worker is awaited; whether any was. */
    private boolean resubscribeSilent(ZContext ctx, List<EventStream> streams) {
        long now = System.nanoTime();
        boolean any = false;
        for (EventStream s : streams) {
            if (s.silent(now, resubscribeAfterNanos)) {
                log.warn("kv events resubscribing worker={} rank={} endpoint={} silent_ms={} heard_before={}",
                        s.worker.url(), s.rank, s.endpoint, (now - s.blocks.awaitingSince()) / 1_000_000,
                        s.lastHeardNanos != 0);
                s.close(ctx);
                s.blocks.resubscribes.incrementAndGet();
                try {
                    s.open(ctx, topic, maxMessageSize, now);
                } catch (RuntimeException e) {
                    failed(ctx, s, e, now);
                }
                any = true;
            }
        }
        return any;
    }

    /** The cache view this subscriber feeds. */
    public CacheView view() {
        return view;
    }

    @Override
    public void close() {
        running = false;
        resolver.shutdownNow();
        try {
            thread.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
