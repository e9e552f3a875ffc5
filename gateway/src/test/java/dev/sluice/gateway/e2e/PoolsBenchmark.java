package dev.sluice.gateway.e2e;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import dev.sluice.testbed.sim.SimMode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * scripts/bench-pools: two model pools behind one gateway, each over its own simulated SGLang 1P1D
 * cluster. The measured pool ({@code steady}) gets the same closed-loop streamed load twice: alone,
 * then while the other pool ({@code flooded}) gets far more than its queue and token budget take.
 * Its TTFT and served count are measured at the client (the first SSE data line), side by side.
 * Not part of the test run: enabled by {@code -Dsluice.bench=pools}.
 */
@EnabledIfSystemProperty(named = "sluice.bench", matches = "pools")
class PoolsBenchmark {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration PHASE = Duration.ofSeconds(Long.getLong("sluice.bench.phase_seconds", 15));
    private static final int STEADY_CLIENTS = 4;
    private static final int FLOOD_CLIENTS = 48;

    /** Closed-loop clients of one model, each sending a streamed chat after the last one ended. */
    private static final class Load {
        final List<Long> ttftMicros = Collections.synchronizedList(new ArrayList<>());
        final Map<Integer, Integer> statuses = new ConcurrentHashMap<>();
        final AtomicBoolean stop = new AtomicBoolean();
        final List<Thread> threads = new ArrayList<>();

        Load(HttpClient http, int port, String model, int clients, int promptWords, int maxTokens) {
            this(http, port, model, clients, promptWords, maxTokens, true);
        }

        /** {@code politeness}: a refused client waits its Retry-After (true) or 100 ms (false: it ignores it). */
        Load(HttpClient http, int port, String model, int clients, int promptWords, int maxTokens, boolean polite) {
            String prompt = String.join(" ", Collections.nCopies(promptWords, "word"));
            for (int i = 0; i < clients; i++) {
                int id = i;
                Thread t = new Thread(() -> {
                    int n = 0;
                    while (!stop.get()) {
                        String body = "{\"model\":\"" + model + "\",\"stream\":true,\"max_tokens\":" + maxTokens
                                + ",\"messages\":[{\"role\":\"user\",\"content\":\"client " + id + " request " + n++
                                + " " + prompt + "\"}]}";
                        long start = System.nanoTime();
                        try {
                            HttpResponse<Stream<String>> r = http.send(PdTestbed.postRequest(URI.create(
                                    "http://127.0.0.1:" + port + "/v1/chat/completions"), body),
                                    HttpResponse.BodyHandlers.ofLines());
                            boolean first = true;
                            for (String line : (Iterable<String>) r.body()::iterator) {
                                if (first && line.startsWith("data:") && r.statusCode() == 200) {
                                    ttftMicros.add((System.nanoTime() - start) / 1000);
                                    first = false;
                                }
                            }
                            statuses.merge(r.statusCode(), 1, Integer::sum);
                            if (r.statusCode() != 200) {
                                // a refused client waits as the OpenAI SDKs do: its Retry-After, here capped at 2 s
                                long wait = r.headers().firstValue("retry-after").map(Long::parseLong).orElse(1L);
                                Thread.sleep(polite ? Math.min(2_000, wait * 1_000) : 100);
                            }
                        } catch (Exception e) {
                            statuses.merge(-1, 1, Integer::sum);
                        }
                    }
                }, "pool-load-" + model + "-" + i);
                t.setDaemon(true);
                t.start();
                threads.add(t);
            }
        }

        void stop() throws InterruptedException {
            stop.set(true);
            for (Thread t : threads) {
                t.join(30_000);
            }
        }

        ObjectNode summary() {
            ObjectNode o = JSON.createObjectNode();
            List<Long> t = new ArrayList<>(ttftMicros);
            Collections.sort(t);
            o.put("served", statuses.getOrDefault(200, 0));
            o.put("refused", statuses.entrySet().stream().filter(e -> e.getKey() != 200).mapToInt(Map.Entry::getValue)
                    .sum());
            o.put("ttft_p50_ms", pct(t, 0.50) / 1000.0).put("ttft_p90_ms", pct(t, 0.90) / 1000.0)
                    .put("ttft_p99_ms", pct(t, 0.99) / 1000.0);
            ObjectNode s = o.putObject("statuses");
            statuses.forEach((k, v) -> s.put(String.valueOf(k), v));
            return o;
        }
    }

    private static long pct(List<Long> sorted, double q) {
        return sorted.isEmpty() ? -1 : sorted.get((int) Math.min(sorted.size() - 1, Math.floor(q * sorted.size())));
    }

    @Test
    void theSteadyPoolAloneAndBesideAFloodedOne() throws Exception {
        SimConfig sim = SimConfig.defaults().withHealthGeneration(false).withPrefillTokensPerSecond(20_000)
                .withDecodeStep(Duration.ofMillis(5));
        try (SimCluster steady = SimCluster.start(1, 1, 0, sim.withModel("steady-model"), SimMode.SGLANG);
             SimCluster flooded = SimCluster.start(1, 1, 0, sim.withModel("flooded-model"), SimMode.SGLANG)) {
            String yaml = "listen: {host: 127.0.0.1, port: 0}\nadmin: {port: 0}\nlogging: {requests: failures}\n"
                    + "health: {interval: 500ms}\npools:\n"
                    + pool("steady", steady, "") + pool("flooded", flooded,
                    "    admission: {max_queued_requests: 8, max_pending_tokens: 20000, max_request_tokens: 20000}\n");
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            ObjectNode out = JSON.createObjectNode();
            try (GatewayServer gw = PdTestbed.startGateway(yaml)) {
                // warm-up (JIT, connections), not measured
                Load warm = new Load(http, gw.port(), "steady-model", STEADY_CLIENTS, 200, 32);
                Thread.sleep(5_000);
                warm.stop();
                Load alone = new Load(http, gw.port(), "steady-model", STEADY_CLIENTS, 200, 32);
                Thread.sleep(PHASE.toMillis());
                alone.stop();
                out.set("steady_alone", alone.summary());
                // beside a pool flooded far past its queue and token budget (long prompts, many clients), whose
                // refused clients wait their Retry-After, then whose refused clients ignore it
                for (boolean polite : new boolean[]{true, false}) {
                    Load flood = new Load(http, gw.port(), "flooded-model", FLOOD_CLIENTS, 2000, 64, polite);
                    Thread.sleep(2_000); // the flood reaches its steady state first
                    Load beside = new Load(http, gw.port(), "steady-model", STEADY_CLIENTS, 200, 32);
                    Thread.sleep(PHASE.toMillis());
                    beside.stop();
                    flood.stop();
                    String kind = polite ? "retry_after" : "ignoring_retry_after";
                    out.set("steady_beside_flood_" + kind, beside.summary());
                    out.set("flooded_" + kind, flood.summary());
                }
                ArrayNode setup = out.putArray("setup");
                setup.add("phase " + PHASE.toSeconds() + " s; steady: " + STEADY_CLIENTS + " closed-loop clients, "
                        + "~200-word prompts, 32 tokens, streamed; flooded: " + FLOOD_CLIENTS + " clients, ~2000-word "
                        + "prompts, 64 tokens, queue 8, pending tokens 20000, a refused client waits its Retry-After (<= 2 s) or "
                        + "100 ms; sims: 20000 prefill tok/s, 5 ms/token; "
                        + "one gateway, one JVM with both simulated clusters, " + Runtime.getRuntime()
                        .availableProcessors() + " cores");
            }
            Path dir = Path.of(System.getProperty("sluice.bench.out", "target/bench-pools"));
            Files.createDirectories(dir);
            Files.writeString(dir.resolve("summary.json"), JSON.writerWithDefaultPrettyPrinter().writeValueAsString(out));
        }
    }

    private static String pool(String name, SimCluster c, String extra) {
        return "  - name: " + name + "\n    models: [" + name + "-model]\n    workers:\n"
                + "      prefill: [{url: " + c.prefills().get(0).url() + ", bootstrap_port: "
                + c.prefills().get(0).bootstrapPort() + "}]\n"
                + "      decode: [{url: " + c.decodes().get(0).url() + "}]\n" + extra;
    }
}
