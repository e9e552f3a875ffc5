package dev.sluice.gateway.cacheview;

import dev.sluice.gateway.config.RoutingConfig.KvEvents;
import dev.sluice.gateway.routing.Worker;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Builds the cache view and its subscriber from {@code routing.kv_events} and the prefill workers. */
public final class KvEventSubscription {
    private static final Logger log = LoggerFactory.getLogger(KvEventSubscription.class);

    private KvEventSubscription() {
    }

    /** A subscriber (not started) for every worker that has an endpoint; the others stay without a view. */
    public static KvEventSubscriber of(KvEvents cfg, List<Worker> prefills) {
        Map<Worker, String> endpoints = new LinkedHashMap<>();
        List<Worker> without = new ArrayList<>();
        for (Worker w : prefills) {
            cfg.endpointOf(w.url(), w.host()).ifPresentOrElse(e -> endpoints.put(w, e), () -> without.add(w));
        }
        for (Worker w : without) {
            log.warn("kv events no endpoint worker={} (cache_aware uses the local prefix tree while it is a candidate)",
                    w.url());
        }
        CacheView view = new CacheView(new ArrayList<>(endpoints.keySet()), cfg.maxBlocksPerWorker(),
                cfg.staleAfter().toNanos(), System::nanoTime);
        return new KvEventSubscriber(view, endpoints, cfg.topic());
    }
}
