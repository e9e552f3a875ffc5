package dev.sluice.testbed.load;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.testbed.load.LoadSpec.Target;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs one load: reads the workers, sends every arrival at its time, waits for every client,
 * waits (bounded) for the workers to finish what the clients left behind, reads the workers again
 * and returns the report. In direct mode it is the router too (see {@link #sendDirect}).
 */
public final class LoadRun {
    static final String PATH = "/v1/chat/completions";
    /** The request header that carries a client's class to Sluice ({@code admission.priorities}). */
    static final String PRIORITY_HEADER = "X-Sluice-Priority";
    /** Sluice's per-request first-token deadline (docs/admission.md): each client sends its patience. */
    static final String DEADLINE_HEADER = "X-Sluice-Deadline-Ms";
    private static final long SETTLE_POLL_MS = 200;
    private final LoadSpec spec;
    private final PrintStream progress;
    private final Queue<RequestResult> results = new ConcurrentLinkedQueue<>();
    private final Map<String, Integer> prefillAnswers = new ConcurrentHashMap<>();
    private final AtomicInteger prefillsOpen = new AtomicInteger();
    private final AtomicInteger roundRobin = new AtomicInteger();
    private final String runId = Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffL);

    public LoadRun(LoadSpec spec, PrintStream progress) {
        this.spec = spec;
        this.progress = progress;
    }

    public ObjectNode run() throws InterruptedException {
        WorkerProbe probe = new WorkerProbe();
        List<URI> workers = spec.workersToRead();
        List<WorkerProbe.Snapshot> before = readAll(probe, workers);
        ChatSessions chat = spec.sessions() == null ? null : new ChatSessions(spec.sessions(), spec.seed(),
                spec.duration());
        long[] offsets = chat != null ? new long[0] : Arrivals.offsetsNanos(spec.arrival(), spec.burst(), spec.rate(),
                spec.requests(), spec.duration(), spec.seed());
        int total = chat != null ? chat.requests() : offsets.length;
        CountDownLatch clientsDone = new CountDownLatch(total);
        Limiter limiter = new Limiter(spec.concurrencyLimit());
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, new DefaultThreadFactory("load", true),
                NioIoHandler.newFactory());
        ScheduledExecutorService clock = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "load-arrivals");
            t.setDaemon(true);
            return t;
        });
        warmUp(group);
        String startedAt = Instant.now().toString();
        long start = System.nanoTime();
        // time zero of the per-request times and the timeline: the first send
        long zero = start + (offsets.length > 0 ? offsets[0] : 0);
        TimelineSampler timeline = new TimelineSampler(spec.target() == Target.GATEWAY,
                spec.target() == Target.GATEWAY ? List.of(spec.options().metricsUrl() == null ? spec.url()
                        : spec.options().metricsUrl()) : spec.prefills(), zero);
        if (chat != null) {
            List<ChatSessions.Session> sessions = chat.sessions();
            progress.printf("[load] %s: %d conversations x %d turns, starting over %.1f s%n", spec.label(),
                    sessions.size(), chat.turns(), sessions.isEmpty() ? 0 : sessions.get(sessions.size() - 1)
                            .startNanos() / 1e9);
        } else {
            progress.printf("[load] %s: %d requests over %.1f s%n", spec.label(), offsets.length,
                    offsets.length == 0 ? 0 : offsets[offsets.length - 1] / 1e9);
        }
        try {
            for (int i = 0; i < offsets.length; i++) {
                int index = i;
                PlannedRequest plan = PlannedRequest.of(spec, index);
                clock.schedule(() -> limiter.submit(() -> send(group, plan, userPrompt(plan), r -> {
                    results.add(r);
                    clientsDone.countDown();
                    limiter.release();
                })), offsets[i], TimeUnit.NANOSECONDS);
            }
            if (chat != null) {
                Turns turns = new Turns(chat, group, clock, limiter, clientsDone);
                for (ChatSessions.Session session : chat.sessions()) {
                    clock.schedule(() -> turns.send(session, 0), session.startNanos(), TimeUnit.NANOSECONDS);
                }
            }
            clock.scheduleAtFixedRate(() -> progress.printf("[load] t=%.0fs done %d/%d%n",
                    (System.nanoTime() - start) / 1e9, total - clientsDone.getCount(), total),
                    10, 10, TimeUnit.SECONDS);
            clientsDone.await();
            long end = System.nanoTime();
            timeline.close();
            long settleStart = end;
            boolean settled = settle(probe, workers, settleStart);
            double settleSeconds = (System.nanoTime() - settleStart) / 1e9;
            awaitPrefills(settleStart);
            List<WorkerProbe.Snapshot> after = readAll(probe, workers);
            return report(startedAt, (end - start) / 1e9, before, after, settled, settleSeconds, chat, zero,
                    timeline);
        } finally {
            timeline.close();
            clock.shutdownNow();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }

    /** The conversations of a chat-sessions run: each turn is sent a think time after the previous one ended. */
    private final class Turns {
        private final ChatSessions chat;
        private final EventLoopGroup group;
        private final ScheduledExecutorService clock;
        private final Limiter limiter;
        private final CountDownLatch clientsDone;

        Turns(ChatSessions chat, EventLoopGroup group, ScheduledExecutorService clock, Limiter limiter,
              CountDownLatch clientsDone) {
            this.chat = chat;
            this.group = group;
            this.clock = clock;
            this.limiter = limiter;
            this.clientsDone = clientsDone;
        }

        /** Sends turn {@code turn}; whatever its outcome, the user goes on with the next one. */
        void send(ChatSessions.Session session, int turn) {
            int index = chat.index(session.id(), turn);
            ArrayNode messages = ClientStream.JSON.createArrayNode();
            for (ChatSessions.Message m : chat.messages(session.id(), turn)) {
                messages.addObject().put("role", m.role()).put("content", m.content());
            }
            limiter.submit(() -> LoadRun.this.send(group, PlannedRequest.of(spec, index), messages, r -> {
                results.add(r);
                clientsDone.countDown();
                limiter.release();
                if (turn + 1 < chat.turns()) {
                    clock.schedule(() -> send(session, turn + 1), session.thinkNanos()[turn + 1], TimeUnit.NANOSECONDS);
                }
            }));
        }
    }

    /** The gateway replica of request {@code index}: clients split round robin, a chat session kept to one. */
    private URI gatewayFor(int index) {
        List<URI> extra = spec.options().replicaUrls();
        if (extra.isEmpty()) {
            return spec.url();
        }
        int client = spec.sessions() == null ? index : index / spec.sessions().turns();
        int k = Math.floorMod(client, extra.size() + 1);
        return k == 0 ? spec.url() : extra.get(k - 1);
    }

    private ArrayNode userPrompt(PlannedRequest plan) {
        ArrayNode messages = ClientStream.JSON.createArrayNode();
        messages.addObject().put("role", "user").put("content", Prompts.of(spec.seed(), plan.index(),
                plan.promptTokens()));
        return messages;
    }

    private void send(EventLoopGroup group, PlannedRequest plan, ArrayNode messages,
                      java.util.function.Consumer<RequestResult> done) {
        boolean stream = spec.options().stream();
        ObjectNode body = ClientStream.JSON.createObjectNode();
        body.put("model", spec.model());
        body.set("messages", messages);
        body.put("max_tokens", spec.maxTokens());
        body.put("stream", stream);
        if (stream) {
            body.putObject("stream_options").put("include_usage", true);
        }
        // the clock starts once the body is built (as in vLLM's bench): building it is not latency
        long sendNanos = System.nanoTime();
        // read only by the simulator, to count GPU work done after this client has left
        body.put("sim_client_gives_up_at_ms", System.currentTimeMillis() + plan.patienceNanos() / 1_000_000);
        if (spec.target() == Target.GATEWAY) {
            // a client that knows how long it will wait says so (the gateway's first-token deadline)
            Map<String, String> headers = new java.util.HashMap<>();
            headers.put(DEADLINE_HEADER, String.valueOf(plan.patienceNanos() / 1_000_000));
            if (plan.className() != null) {
                headers.put(PRIORITY_HEADER, plan.className());
            }
            ClientStream.start(group, gatewayFor(plan.index()), PATH, bytes(body), plan, headers, false, sendNanos,
                    done);
        } else {
            sendDirect(group, body, plan, sendNanos, done);
        }
    }

    /**
     * The router the direct target plays: one prefill and one decode, the same body to both at
     * once with bootstrap_host/port/room added; the decode's answer is the client's, the prefill's is
     * read and dropped. What happens when the client gives up depends on the router
     * ({@link LoadOptions.Router}): SGLang's router closes only the decode connection (it never calls
     * /abort_request; the prefill half runs to its end); mini_lb closes both with a stream, and
     * neither without one.
     */
    private void sendDirect(EventLoopGroup group, ObjectNode body, PlannedRequest plan, long sendNanos,
                            java.util.function.Consumer<RequestResult> done) {
        LoadOptions.Router router = spec.options().routerOrDefault();
        int n = roundRobin.getAndIncrement();
        int p;
        int d;
        if (router == LoadOptions.Router.MINI_LB) { // select_pair: random.randint over each list
            java.util.SplittableRandom pick = new java.util.SplittableRandom(spec.seed() * 31 + plan.index());
            p = pick.nextInt(spec.prefills().size());
            d = pick.nextInt(spec.decodes().size());
        } else {
            p = n % spec.prefills().size();
            d = n % spec.decodes().size();
        }
        URI prefill = spec.prefills().get(p);
        URI decode = spec.decodes().get(d);
        body.put("bootstrap_host", prefill.getHost());
        body.put("bootstrap_port", spec.bootstrapPorts().get(p));
        body.put("bootstrap_room", ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        if (router == LoadOptions.Router.SGLANG_ROUTER) {
            body.put("rid", "load-" + runId + "-" + plan.index()); // mini_lb adds no rid
        }
        byte[] bytes = bytes(body);
        prefillsOpen.incrementAndGet();
        io.netty.channel.Channel prefillCall = DiscardCall.start(group, prefill, PATH, bytes, how -> {
            prefillAnswers.merge(how, 1, Integer::sum);
            prefillsOpen.decrementAndGet();
        });
        if (router == LoadOptions.Router.MINI_LB && spec.options().stream()) {
            // the client's end (answer, give-up, failure) ends mini_lb's stream generator: its aiohttp
            // session closes, and with it the prefill connection
            ClientStream.start(group, decode, PATH, bytes, plan, Map.of(), false, sendNanos, r -> {
                DiscardCall.closeByRouter(prefillCall);
                done.accept(r);
            });
        } else {
            boolean readOn = router == LoadOptions.Router.MINI_LB; // a non-streamed handler runs to its end
            ClientStream.start(group, decode, PATH, bytes, plan, Map.of(), readOn, sendNanos, done);
        }
    }

    /**
     * A cold JVM takes hundreds of milliseconds over its first connection and its first large JSON
     * body; that must not be measured as the first requests' TTFT. One body is built and thrown
     * away and every target answers a GET /health over this client's own code path first.
     */
    private void warmUp(EventLoopGroup group) throws InterruptedException {
        bytes(ClientStream.JSON.createObjectNode().put("content", Prompts.of(spec.seed(), -1, spec.promptTokens())));
        List<URI> targets = spec.target() == Target.GATEWAY ? List.of(spec.url())
                : java.util.stream.Stream.concat(spec.prefills().stream(), spec.decodes().stream()).toList();
        CountDownLatch answered = new CountDownLatch(targets.size());
        for (URI t : targets) {
            DiscardCall.start(group, t, HttpCalls.get(t, "/health"), how -> answered.countDown());
        }
        if (!answered.await(10, TimeUnit.SECONDS)) {
            progress.println("[load] warning: a target did not answer GET /health within 10 s");
        }
    }

    private static byte[] bytes(ObjectNode body) {
        return body.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** Polls the workers until none runs or queues anything, at most {@code --settle}. */
    private boolean settle(WorkerProbe probe, List<URI> workers, long from) throws InterruptedException {
        long limit = spec.settle().toNanos();
        while (true) {
            if (readAll(probe, workers).stream().allMatch(WorkerProbe.Snapshot::idle)) {
                return true;
            }
            if (System.nanoTime() - from >= limit) {
                progress.printf("[load] workers still busy after the %d s settle limit%n", spec.settle().toSeconds());
                return false;
            }
            Thread.sleep(SETTLE_POLL_MS); // pacing of an external poll, not synchronisation
        }
    }

    /** The dropped prefill answers arrive once the workers are idle; wait for them, bounded. */
    private void awaitPrefills(long from) throws InterruptedException {
        long limit = Math.max(spec.settle().toNanos(), 5_000_000_000L);
        while (prefillsOpen.get() > 0 && System.nanoTime() - from < limit) {
            Thread.sleep(20);
        }
    }

    private static List<WorkerProbe.Snapshot> readAll(WorkerProbe probe, List<URI> workers) {
        List<WorkerProbe.Snapshot> out = new ArrayList<>();
        for (URI w : workers) {
            out.add(probe.read(w));
        }
        return out;
    }

    private ObjectNode report(String startedAt, double seconds, List<WorkerProbe.Snapshot> before,
                              List<WorkerProbe.Snapshot> after, boolean settled, double settleSeconds,
                              ChatSessions chat, long zero, TimelineSampler timeline) {
        ObjectNode o = ClientStream.JSON.createObjectNode();
        o.put("label", spec.label());
        o.put("target", spec.target().name().toLowerCase());
        o.put("started_at", startedAt);
        o.set("config", spec.toJson());
        o.setAll(LoadReport.clients(results, seconds, spec.sloTtft(), spec.sloTpot(), spec.sloE2e()));
        o.set("by_class", LoadReport.byClass(results, seconds, spec.sloTpot(), spec.sloE2e()));
        if (spec.target() == Target.DIRECT) {
            ObjectNode router = o.putObject("router");
            ObjectNode answers = router.putObject("prefill_answers");
            new TreeMap<>(prefillAnswers).forEach(answers::put);
            router.put("prefill_answers_missing", prefillsOpen.get());
        }
        o.set("workers", LoadReport.workers(before, after, settled, settleSeconds));
        PrefillReport.of(before, after).ifPresent(p -> o.set("prefill", p));
        if (chat != null) {
            long[] bound = chat.cacheBound();
            ObjectNode plan = o.putObject("workload_plan");
            plan.put("requests", chat.requests());
            plan.put("prompt_tokens", bound[0]);
            plan.put("cacheable_tokens", bound[1]);
            Summary.put(plan, "cacheable_share", bound[0] == 0 ? Double.NaN : (double) bound[1] / bound[0]);
        }
        o.set("requests", LoadReport.perRequest(results, chat == null ? 0 : chat.turns(),
                chat == null ? zero : Long.MIN_VALUE));
        o.set("timeline", timeline.toJson());
        return o;
    }

    /** The results so far (for tests). */
    List<RequestResult> results() {
        return List.copyOf(results);
    }
}
