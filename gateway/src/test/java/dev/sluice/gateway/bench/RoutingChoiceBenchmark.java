package dev.sluice.gateway.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.GatewayConfig;
import dev.sluice.gateway.config.RoutingConfig;
import dev.sluice.gateway.routing.LoadView;
import dev.sluice.gateway.routing.PrefixKey;
import dev.sluice.gateway.routing.RoutingPolicies;
import dev.sluice.gateway.routing.RoutingPolicy;
import dev.sluice.gateway.routing.RoutingRequest;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import dev.sluice.gateway.routing.WorkerSet;
import dev.sluice.gateway.routing.WorkerTelemetry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One routing decision as admission makes it under its lock: the configured {@link RoutingPolicy}
 * (built by {@link RoutingPolicies} from YAML, as the gateway builds it) choosing among 4 prefill
 * candidates (2 for decode) with a {@link LoadView} of windows and fresh telemetry, then
 * {@code dispatched} (cache_aware: the prompt inserted into its prefix tree). cache_aware runs on a
 * warmed tree: 8 system prompts, 64 conversations of 16 turns each already routed, keys of
 * {@code keyChars} characters (half system prompt, half conversation), cycled. Beside it the
 * rendering of a chat body into its prefix key ({@link PrefixKey#of}), done per request on the event
 * loop when a policy reads keys. Run: {@code scripts/bench-jmh}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Dio.netty.leakDetection.level=disabled", EventLoopThreadsExecutor.JVM_ARG_EXECUTOR,
    EventLoopThreadsExecutor.JVM_ARG_CLASS})
@State(Scope.Thread)
public class RoutingChoiceBenchmark {
    private static final int SYSTEM_PROMPTS = 8;
    private static final int CONVERSATIONS = 64;
    private static final int TURNS = 16;

    @Param({"2000", "8000"})
    public int keyChars;

    private List<Worker> prefills;
    private List<Worker> decodes;
    private RoutingPolicy roundRobin;
    private RoutingPolicy leastLoad;
    private RoutingPolicy powerOfTwo;
    private RoutingPolicy cacheAware;
    private RoutingPolicy decodeLeastLoad;
    private LoadView prefillView;
    private LoadView decodeView;
    private RoutingRequest[] requests;
    private ObjectNode body;
    private int next;

    @Setup
    public void setup() {
        GatewayConfig cfg = ConfigLoader.parse("""
                workers:
                  prefill: [{url: "http://10.0.0.1:1"}, {url: "http://10.0.0.2:1"}, {url: "http://10.0.0.3:1"},
                            {url: "http://10.0.0.4:1"}]
                  decode: [{url: "http://10.0.1.1:1"}, {url: "http://10.0.1.2:1"}]
                routing:
                  prefill: { policy: cache_aware }
                  decode: { policy: least_load }
                """, "bench");
        WorkerSet workers = new WorkerSet(cfg.workers());
        prefills = workers.prefill();
        decodes = workers.decode();
        long now = System.nanoTime();
        int i = 0;
        for (Worker w : workers.all()) {
            w.telemetry(new WorkerTelemetry(now, true, Map.of(WorkerTelemetry.Field.QUEUE_REQUESTS, (double) (i % 3),
                    WorkerTelemetry.Field.TOKEN_USAGE, 0.1 * i)));
            i++;
        }
        prefillView = new View(prefills, true);
        decodeView = new View(decodes, false);
        cacheAware = RoutingPolicies.create(cfg.routing(), WorkerRole.PREFILL);
        decodeLeastLoad = RoutingPolicies.create(cfg.routing(), WorkerRole.DECODE);
        roundRobin = RoutingPolicies.create(withPolicy("round_robin"), WorkerRole.PREFILL);
        leastLoad = RoutingPolicies.create(withPolicy("least_load"), WorkerRole.PREFILL);
        powerOfTwo = RoutingPolicies.create(withPolicy("power_of_two"), WorkerRole.PREFILL);

        String[] system = new String[SYSTEM_PROMPTS];
        for (int s = 0; s < SYSTEM_PROMPTS; s++) {
            system[s] = BenchBodies.text(new SplittableRandom(s), keyChars / 2);
        }
        List<RoutingRequest> all = new ArrayList<>();
        SplittableRandom r = new SplittableRandom(42);
        for (int c = 0; c < CONVERSATIONS; c++) {
            String history = BenchBodies.text(r, keyChars / 2);
            for (int t = 0; t < TURNS; t++) {
                // turn t: the system prompt, history growing towards keyChars, then a fresh user message
                int shared = keyChars / 2 - 200 + (t * 150) % 200;
                String key = system[c % SYSTEM_PROMPTS] + history.substring(0, Math.min(history.length(), shared))
                        + BenchBodies.text(r, 200);
                all.add(new RoutingRequest(key.substring(0, Math.min(key.length(), keyChars)), key.length() / 4));
            }
        }
        requests = all.toArray(RoutingRequest[]::new);
        for (RoutingRequest req : requests) { // warm the tree: every key routed once
            cacheAware.dispatched(cacheAware.choose(prefills, req, prefillView).worker(), req);
        }
        body = BenchBodies.chat(keyChars, 3);
    }

    private static RoutingConfig withPolicy(String policy) {
        return ConfigLoader.parse("""
                workers:
                  prefill: [{url: "http://10.0.0.1:1"}]
                  decode: [{url: "http://10.0.1.1:1"}]
                routing:
                  prefill: { policy: %s }
                """.formatted(policy), "bench").routing();
    }

    private RoutingRequest nextRequest() {
        RoutingRequest r = requests[next];
        next = next + 1 == requests.length ? 0 : next + 1;
        return r;
    }

    @Benchmark
    public Worker roundRobin() {
        return route(roundRobin, prefills, prefillView);
    }

    @Benchmark
    public Worker leastLoad() {
        return route(leastLoad, prefills, prefillView);
    }

    @Benchmark
    public Worker powerOfTwo() {
        return route(powerOfTwo, prefills, prefillView);
    }

    @Benchmark
    public Worker leastLoadDecode() {
        return route(decodeLeastLoad, decodes, decodeView);
    }

    /** choose + dispatched on the warmed tree (prefix hits; the insert walks the path and touches its LRU marks). */
    @Benchmark
    public Worker cacheAware() {
        return route(cacheAware, prefills, prefillView);
    }

    /** The prefix key rendered from a chat body of about keyChars characters of content. */
    @Benchmark
    public String prefixKey() {
        return PrefixKey.of("chat_completions", body);
    }

    private Worker route(RoutingPolicy policy, List<Worker> candidates, LoadView view) {
        RoutingRequest req = nextRequest();
        // admission hands the policy a fresh immutable copy of its candidate list (WorkerWindows.choose)
        RoutingPolicy.Choice c = policy.choose(List.copyOf(candidates), req, view);
        policy.dispatched(c.worker(), req);
        return c.worker();
    }

    /** Like admission's view: window numbers from a map, telemetry read from the worker (fresh). */
    private static final class View implements LoadView {
        private final Map<Worker, long[]> windows = new HashMap<>();
        private final boolean prefillRole;

        View(List<Worker> workers, boolean prefillRole) {
            this.prefillRole = prefillRole;
            long k = 1;
            for (Worker w : workers) {
                windows.put(w, new long[] {k, k * 3_000, k * 7});
                k++;
            }
        }

        @Override
        public long windowTokens(Worker w) {
            return windows.get(w)[1];
        }

        @Override
        public int windowRequests(Worker w) {
            long[] win = windows.get(w);
            return (int) (prefillRole ? win[0] : win[2]);
        }

        @Override
        public double reportedQueue(Worker w) {
            return w.telemetry().value(WorkerTelemetry.Field.QUEUE_REQUESTS, System.nanoTime(), Long.MAX_VALUE);
        }

        @Override
        public double kvUsage(Worker w) {
            return w.telemetry().value(WorkerTelemetry.Field.TOKEN_USAGE, System.nanoTime(), Long.MAX_VALUE);
        }

        @Override
        public double reportedPromptTokens(Worker w) {
            return w.telemetry().value(WorkerTelemetry.Field.PROMPT_TOKENS_TOTAL, System.nanoTime(), Long.MAX_VALUE);
        }
    }
}
