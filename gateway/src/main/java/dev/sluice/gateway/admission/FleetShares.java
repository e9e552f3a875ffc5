package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig;
import java.util.Map;
import java.util.Objects;

/**
 * This replica's share of the fleet's admission limits (docs/scale-out.md): the queue bound, the
 * pending-token budget and, per worker URL, the prefill window (requests, tokens) and the decode
 * stream cap. The configured values are the whole fleet's; these are what this replica may use now.
 * A worker not (yet) in the maps gets its fleet limit divided by {@code divisor}; so does a tenant's
 * token rate ({@code tenantTokens}: tokens per minute by tenant, only the tenants leased here).
 *
 * @param divisor the replicas the fleet is split over for what the maps do not name (at least 1)
 */
public record FleetShares(int maxQueuedRequests, long maxPendingTokens, Map<String, Integer> prefillRequests,
                          Map<String, Long> prefillTokens, Map<String, Integer> decodeStreams, Map<String, Long> tenantTokens,
                          int divisor) {
    public FleetShares {
        tenantTokens = Map.copyOf(tenantTokens);
        prefillRequests = Map.copyOf(prefillRequests);
        prefillTokens = Map.copyOf(prefillTokens);
        decodeStreams = Map.copyOf(decodeStreams);
        if (maxQueuedRequests < 0 || maxPendingTokens < 0 || divisor < 1) {
            throw new IllegalArgumentException("shares: queue " + maxQueuedRequests + ", pending tokens "
                    + maxPendingTokens + ", divisor " + divisor + " (expected: >= 0, >= 0, >= 1)");
        }
    }

    /**
     * The admission limits this replica decides with: the fleet's, with the queue bound and the
     * pending-token budget replaced by its shares ({@link AdmissionConfig#withShares}: a share may be
     * below {@code max_request_tokens}, which the file's checks would refuse).
     */
    AdmissionConfig applyTo(AdmissionConfig f) {
        return f.withShares(maxQueuedRequests, maxPendingTokens);
    }

    /** Without the tenants: the shares of the budgets alone (tests, and a fleet that leases no tenant rate). */
    public FleetShares(int maxQueuedRequests, long maxPendingTokens, Map<String, Integer> prefillRequests,
                       Map<String, Long> prefillTokens, Map<String, Integer> decodeStreams, int divisor) {
        this(maxQueuedRequests, maxPendingTokens, prefillRequests, prefillTokens, decodeStreams, Map.of(), divisor);
    }

    /**
     * Nothing: every limit 0, every worker's window and tenant's rate too (a replica whose lease ran
     * out: what a fleet budget / {@link Integer#MAX_VALUE} gives).
     */
    public static FleetShares none() {
        return new FleetShares(0, 0, Map.of(), Map.of(), Map.of(), Map.of(), Integer.MAX_VALUE);
    }

    /** A tenant's token rate here (tokens per minute): its grant, else its configured rate / divisor. */
    long tenantTokens(String tenant, long configured) {
        return tenantTokens.getOrDefault(Objects.requireNonNull(tenant, "tenant"), configured / divisor);
    }

    int prefillRequests(String url, int fleet) {
        return prefillRequests.getOrDefault(Objects.requireNonNull(url, "url"), fleet / divisor);
    }

    long prefillTokens(String url, long fleet) {
        return prefillTokens.getOrDefault(Objects.requireNonNull(url, "url"), fleet / divisor);
    }

    int decodeStreams(String url, int fleet) {
        return decodeStreams.getOrDefault(Objects.requireNonNull(url, "url"), fleet / divisor);
    }
}
