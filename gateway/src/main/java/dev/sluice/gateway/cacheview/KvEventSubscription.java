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
     * (a reload added or retired them). Idempotent; any thread.
     */
    public synchronized void follow(List<Worker> prefills) {
        Map<Worker, List<String>> endpoints = new LinkedHashMap<>();
        for (Worker w : prefills) {
            cfg.endpointOf(w.url(), w.host()).ifPresentOrElse(e -> endpoints.put(w, cfg.rankEndpoints(e)), () -> {
                if (warned.add(w)) {
                    log.warn("kv events no endpoint worker={} (cache_aware uses the local prefix tree while it is a "
                            + "candidate)", w.url());
                }
            });
        }
        warned.retainAll(prefills);
        if (!endpoints.keySet().equals(new HashSet<>(subscriber.view().workers()))) {
            subscriber.follow(endpoints);
        }
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
