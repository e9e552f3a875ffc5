package dev.sluice.gateway.cacheview;

import dev.sluice.gateway.config.KvEventsConfig;
import dev.sluice.gateway.routing.Worker;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code routing.kv_events} applied to the prefill workers: the cache view and the subscriber
 * that feeds it, following the worker list as reloads change it ({@link #follow}).
 */
public final class KvEventSubscription implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(KvEventSubscription.class);

    private final KvEventsConfig cfg;
    private final KvEventSubscriber subscriber;
    /** Workers already warned about (no endpoint), so that a periodic follow logs each once. */
    private final Set<Worker> warned = new HashSet<>();

    private KvEventSubscription(KvEventsConfig cfg, KvEventSubscriber subscriber) {
        this.cfg = cfg;
        this.subscriber = subscriber;
    }

    /** The view and its subscriber (not started) for every worker that has an endpoint; the others stay without a view. */
    public static KvEventSubscription of(KvEventsConfig cfg, List<Worker> prefills) {
        Objects.requireNonNull(cfg, "cfg");
        CacheView view = new CacheView(List.of(), cfg.maxBlocksPerWorker(),
                cfg.maxMemoryBytes(Runtime.getRuntime().maxMemory()), cfg.staleAfter().toNanos(), System::nanoTime);
        KvEventSubscription s = new KvEventSubscription(cfg, new KvEventSubscriber(view, Map.of(), cfg.topic(),
                cfg.resubscribeAfter().toNanos(), cfg.staleAfter().toNanos(), cfg.maxMessageSize()));
        s.follow(prefills);
        return s;
    }

    /**
     * Subscribes the workers of {@code prefills} not subscribed yet and drops those no longer in it
     * (a reload added or retired them); a worker whose DP ranks changed (its {@code /server_info}
     * told its {@code dp_size}, or another one) gets one stream per rank anew. Idempotent; any thread.
     */
    public synchronized void follow(List<Worker> prefills) {
        Map<Worker, List<String>> endpoints = new LinkedHashMap<>();
        for (Worker w : prefills) {
            int ranks = ranksOf(w);
            cfg.endpointOf(w.url(), w.host()).ifPresentOrElse(e -> endpoints.put(w, cfg.rankEndpoints(e, ranks)), () -> {
                if (warned.add(w)) {
                    log.warn("kv events no endpoint worker={} (cache_aware uses the local prefix tree while it is a "
                            + "candidate)", w.url());
                }
            });
        }
        warned.retainAll(prefills);
        if (!endpoints.keySet().equals(new HashSet<>(subscriber.view().workers())) || ranksChanged(endpoints)) {
            subscriber.follow(endpoints);
        }
    }

    /**
     * The event streams of {@code w}: one per DP rank of its own {@code dp_size} when it reported one
     * (SGLang starts one scheduler per attention-DP rank, and each with KV events on publishes on the
     * endpoint's port + its {@code attn_dp_rank}: {@code SchedulerMetricsMixin.init_kv_events} creates the
     * publisher with {@code self.attn_dp_rank}, sgl-project/sglang@78ac30c2056f2c25089c1d3203c3d5c13dc3d946
     * python/sglang/srt/managers/scheduler_metrics_mixin.py; {@code ZmqEventPublisher.offset_endpoint_port},
     * sgl-project/sglang@612d579090db24ec7c47cc5ca6b83e0c649b8c28 python/sglang/srt/disaggregation/kv_events.py);
     * for vLLM, one per engine its {@code /metrics} shows when it shows more than one: each engine core publishes
     * on the endpoint's port + its data-parallel rank ({@code ZmqEventPublisher.offset_endpoint_port},
     * vllm-project/vllm vllm/distributed/kv_events.py), so the configured endpoint is the first engine's;
     * else {@code routing.kv_events.dp_ranks}.
     */
    int ranksOf(Worker w) {
        int reported = w.identity().dpSize();
        if (reported > 0) {
            return reported;
        }
        int engines = w.identity().engines();
        return engines > 1 ? engines : cfg.dpRanks();
    }

    private boolean ranksChanged(Map<Worker, List<String>> endpoints) {
        for (Map.Entry<Worker, List<String>> e : endpoints.entrySet()) {
            if (subscriber.view().of(e.getKey()).map(b -> b.ranks() != e.getValue().size()).orElse(true)) {
                return true;
            }
        }
        return false;
    }

    public CacheView view() {
        return subscriber.view();
    }

    public void start() {
        subscriber.start();
    }

    @Override
    public void close() {
        subscriber.close();
    }
}
