package dev.sluice.gateway.testing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.testbed.sim.PrefillServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Issue 20's burst: {@code n} short {@code /generate} prompts sent at once, round robin over the
 * gateways' ports, while the prefill's own queue is sampled; each answer must be 200 or 429.
 *
 * @param maxQueued           the most requests waiting at the prefill at once
 * @param maxQueuedOrRunning  the most waiting or running there at once
 */
public record PrefillBurst(int maxQueued, int maxQueuedOrRunning, int served, int rejected) {
    public static PrefillBurst send(HttpClient http, List<Integer> ports, int n, PrefillServer prefill)
            throws Exception {
        AtomicInteger maxQueued = new AtomicInteger();
        AtomicInteger maxBusy = new AtomicInteger();
        AtomicBoolean sampling = new AtomicBoolean(true);
        Thread sampler = new Thread(() -> {
            while (sampling.get()) {
                int queued = prefill.stats().queued();
                maxQueued.accumulateAndGet(queued, Math::max);
                maxBusy.accumulateAndGet(queued + prefill.stats().running(), Math::max);
                Thread.onSpinWait();
            }
        }, "prefill-queue-sampler");
        sampler.start();
        List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String body = "{\"text\":\"burst " + i + " " + "abc ".repeat(200)
                    + "\",\"sampling_params\":{\"max_new_tokens\":2}}";
            all.add(http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports.get(i % ports.size())
                    + "/generate")).timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString()));
        }
        int served = 0;
        int rejected = 0;
        try {
            for (CompletableFuture<HttpResponse<String>> f : all) {
                HttpResponse<String> r = f.get(60, TimeUnit.SECONDS);
                assertThat(r.statusCode()).as(r.body()).isIn(200, 429);
                if (r.statusCode() == 200) {
                    served++;
                } else {
                    rejected++;
                }
            }
        } finally {
            sampling.set(false);
            sampler.join();
        }
        return new PrefillBurst(maxQueued.get(), maxBusy.get(), served, rejected);
    }
}
