package dev.sluice.gateway.coordination;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.admission.AdmissionSnapshot;
import dev.sluice.gateway.admission.FleetShares;
import dev.sluice.gateway.admission.TenantDemand;
import dev.sluice.gateway.admission.WorkerWindow;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What this replica reports at a renewal, per resource: the fleet's capacity (the configured
 * limit), its usage, and its demand (usage + what waits for it + a small headroom), and how grants
 * come back as {@link FleetShares}.
 *
 * <p>The headroom (1/32 of the capacity, at least 1) makes an idle replica ask for something, so a
 * burst that lands on it starts at once on a share it already holds rather than a renewal later.
 */
final class FleetDemand {
    private static final ObjectMapper JSON = new ObjectMapper();

    private FleetDemand() {
    }

    /** One resource's line of the report: {@code headroom} of the demand is not work (it yields to work elsewhere). */
    record Line(long capacity, long usage, long demand, long headroom) {
        Line(long capacity, long usage, long demand) {
            this(capacity, usage, demand, 0);
        }

        /**
         * Draining: no headroom, and the rest goes back to the fleet now. Of a resource a request takes at
         * admission (the queue, the pending tokens, a tenant's rate) it asks for its usage: it admits
         * nothing new. Of a window its queued requests still need (a prefill's, a decode's) it asks for
         * its work, usage and what waits: asking for usage alone left those requests without a window
         * until their queue_timeout ({@code bench-replicas rolling} found it).
         */
        Line draining(boolean keepsWaitingWork) {
            return new Line(capacity, usage, keepsWaitingWork ? Math.max(usage, demand - headroom) : usage, 0);
        }
    }

    static Map<Resource, Line> of(AdmissionConfig fleet, AdmissionSnapshot s, WorkerSet workers, long queueFull,
                                  long budgetTokens, List<TenantDemand> tenants) {
        Map<Resource, Line> out = new LinkedHashMap<>();
        int queued = s.queued();
        long queuedTokens = Math.max(0, s.pendingTokens() - s.inflightPrefillTokens());
        out.put(Resource.QUEUE, line(fleet.maxQueuedRequests(), queued, queueFull));
        out.put(Resource.PENDING_TOKENS, line(fleet.maxPendingTokens(), s.pendingTokens(), budgetTokens));
        for (Worker w : workers.prefill()) {
            WorkerWindow win = s.perWorker().get(w);
            int requests = win == null ? 0 : win.prefillRequests();
            long tokens = win == null ? 0 : win.prefillTokens();
            out.put(new Resource(Resource.Kind.PREFILL_REQUESTS, w.url()),
                    line(fleet.prefillMaxInflightRequests(), requests, queued));
            out.put(new Resource(Resource.Kind.PREFILL_TOKENS, w.url()),
                    line(fleet.prefillMaxInflightTokens(), tokens, queuedTokens));
        }
        for (Worker w : workers.decode()) {
            WorkerWindow win = s.perWorker().get(w);
            out.put(new Resource(Resource.Kind.DECODE_STREAMS, w.url()),
                    line(fleet.decodeMaxInflightStreams(), win == null ? 0 : win.streams(), queued));
        }
        for (TenantDemand t : tenants) {
            out.put(new Resource(Resource.Kind.TENANT_TOKENS, t.tenant()), tenantLine(t));
        }
        return out;
    }

    /**
     * A tenant's token rate, tokens per minute. Its usage is the rate its bucket refills at here now
     * (what this replica holds of the fleet's rate, whatever it consumed: a rate spent is not held);
     * its demand what it consumed lately, plus what was refused for its rate (at most the capacity),
     * plus the headroom.
     */
    static Line tenantLine(TenantDemand t) {
        long headroom = Math.max(1, t.configured() / 32);
        return new Line(t.configured(), t.inForce(),
                t.consumed() + Math.min(t.refused(), t.configured()) + headroom, headroom);
    }

    private static Line line(long capacity, long usage, long waiting) {
        long headroom = Math.max(1, capacity / 32);
        return new Line(capacity, usage, usage + Math.min(waiting, capacity) + headroom, headroom);
    }

    static String json(Map<Resource, Line> lines) {
        return json(lines, Map.of(), false);
    }

    /**
     * The report: per resource {@code [capacity, usage, demand, enforced, headroom]}, {@code enforced}
     * the grant this replica admits on until it applies the answer (0 for a resource it holds none of);
     * draining, each demand is its usage, and of a window its work (no headroom: {@link Line#draining}).
     */
    static String json(Map<Resource, Line> lines, Map<Resource, Long> enforced, boolean draining) {
        ObjectNode o = JSON.createObjectNode();
        lines.forEach((r, line) -> {
            Line l = draining ? line.draining(r.kind() == Resource.Kind.PREFILL_REQUESTS
                    || r.kind() == Resource.Kind.PREFILL_TOKENS || r.kind() == Resource.Kind.DECODE_STREAMS) : line;
            o.putArray(r.name()).add(l.capacity()).add(l.usage()).add(l.demand()).add(enforced.getOrDefault(r, 0L))
                    .add(l.headroom());
        });
        return o.toString();
    }

    /** The share guard's figures for the lease script: {prefill worker url: prompt tokens}, whole tokens. */
    static String routedJson(Map<String, Double> own) {
        ObjectNode o = JSON.createObjectNode();
        own.forEach((url, v) -> {
            if (Double.isFinite(v) && v >= 1) {
                o.put(url, Math.round(v));
            }
        });
        return o.toString();
    }

    /** Grants as admission limits; a resource (or a tenant's rate) without a grant gets its capacity / {@code divisor}. */
    static FleetShares shares(Map<Resource, Long> grants, AdmissionConfig fleet, int divisor) {
        Map<String, Integer> prefillRequests = new HashMap<>();
        Map<String, Long> prefillTokens = new HashMap<>();
        Map<String, Integer> decodeStreams = new HashMap<>();
        Map<String, Long> tenantTokens = new HashMap<>();
        grants.forEach((r, g) -> {
            switch (r.kind()) {
                case PREFILL_REQUESTS -> prefillRequests.put(r.worker(), (int) Math.min(Integer.MAX_VALUE, g));
                case PREFILL_TOKENS -> prefillTokens.put(r.worker(), g);
                case DECODE_STREAMS -> decodeStreams.put(r.worker(), (int) Math.min(Integer.MAX_VALUE, g));
                case TENANT_TOKENS -> tenantTokens.put(r.worker(), g);
                default -> { }
            }
        });
        Long queue = grants.get(Resource.QUEUE);
        Long pending = grants.get(Resource.PENDING_TOKENS);
        return new FleetShares(queue == null ? fleet.maxQueuedRequests() / divisor : (int) Math.min(Integer.MAX_VALUE, queue),
                pending == null ? fleet.maxPendingTokens() / divisor : pending, prefillRequests, prefillTokens,
                decodeStreams, tenantTokens, divisor);
    }

    /** Redis gone and the lease lapsed: every resource at its capacity / N. */
    static Map<Resource, Long> fallback(Map<Resource, Line> lines, int replicas) {
        Map<Resource, Long> out = new LinkedHashMap<>();
        lines.forEach((r, l) -> out.put(r, ProportionalShares.fallback(l.capacity(), replicas)));
        return out;
    }
}
