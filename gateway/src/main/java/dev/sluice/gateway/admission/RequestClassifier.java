package dev.sluice.gateway.admission;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.api.ApiException;
import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.config.AdmissionConfig.ApiKey;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;

/**
 * Reads who a request is for and how urgent it is: the tenant (a configured API key's tenant, or
 * {@code X-Sluice-Tenant}), the priority class ({@code X-Sluice-Priority}, which may lower but
 * never raise the class a configured API key grants) and the client's own deadline
 * ({@code X-Sluice-Deadline-Ms}: how long it is willing to wait in the queue), and whether it
 * wants to hear where it stands while it waits ({@code X-Sluice-Queue-Updates}: 1 or 0, else its
 * class's {@code admission.per_class.<class>.queue_updates}).
 */
public final class RequestClassifier {
    public static final String PRIORITY = "X-Sluice-Priority";
    public static final String TENANT = "X-Sluice-Tenant";
    public static final String DEADLINE_MS = "X-Sluice-Deadline-Ms";
    public static final String QUEUE_UPDATES = "X-Sluice-Queue-Updates";

    /** Where a request stands in the queue, and whether it hears of it while it waits (a stream only). */
    public record RequestClass(int priority, String tenant, long deadlineNanos, boolean queueUpdates) {
        public RequestClass(int priority, String tenant, long deadlineNanos) {
            this(priority, tenant, deadlineNanos, false);
        }
    }

    private static final java.util.regex.Pattern TENANT_NAME = java.util.regex.Pattern.compile("[A-Za-z0-9._-]{1,64}");

    private final AdmissionConfig config;
    private final ApiKeys keys;

    public RequestClassifier(AdmissionConfig config) {
        this.config = config;
        this.keys = new ApiKeys(config.apiKeys());
    }

    /**
     * Who sent the request. With API keys configured, the key decides the tenant (X-Sluice-Tenant
     * is ignored: it could otherwise spend another tenant's quota), an unknown or malformed key is a
     * 401, and so is no key when {@code require_api_key} is on. Without keys configured (a trusted
     * network), X-Sluice-Tenant names the tenant, and a client's own bearer key, if any, gets a
     * tenant of its own (a digest prefix, never the key).
     */
    public RequestClass classify(HttpHeaders headers, long nowNanos) throws ApiException {
        String authorization = headers.get(HttpHeaderNames.AUTHORIZATION);
        String key = bearer(authorization);
        ApiKey known = null;
        if (!keys.isEmpty()) {
            if (authorization != null && key == null) {
                throw new ApiException(ApiError.unauthorized("Authorization must be 'Bearer <API key>'"));
            }
            if (key != null) {
                known = keys.match(key);
                if (known == null) {
                    throw new ApiException(ApiError.unauthorized("Incorrect API key provided"));
                }
            } else if (config.requireApiKey()) {
                throw new ApiException(ApiError.unauthorized("You didn't provide an API key: send Authorization: "
                        + "Bearer <key>"));
            }
        }
        int ceiling = known != null && known.priority() != null ? config.priorityIndex(known.priority()) : 0;
        int priority = known != null && known.priority() != null ? ceiling : config.priorityIndex(config.defaultPriority());
        String asked = headers.get(PRIORITY);
        if (asked != null) {
            int idx = config.priorityIndex(asked.trim());
            if (idx < 0) {
                throw new ApiException(ApiError.invalidRequest("invalid_priority", PRIORITY + ": '" + asked
                        + "' is not a priority class (expected one of " + config.priorities() + ")"));
            }
            priority = Math.max(idx, ceiling); // a header can lower the key's class, never raise it
        }
        String tenant;
        if (known != null) {
            tenant = known.tenant();
        } else if (keys.isEmpty() && headers.get(TENANT) != null && !headers.get(TENANT).isBlank()) {
            tenant = headers.get(TENANT).trim();
            if (!TENANT_NAME.matcher(tenant).matches()) {
                // tenants become metric labels, queue lanes and log fields: bounded and plain
                throw new ApiException(ApiError.invalidRequest("invalid_tenant", TENANT + " must be 1-64 characters "
                        + "of letters, digits, '.', '_' and '-'"));
            }
        } else if (key != null) {
            tenant = "key-" + ApiKeys.hex(key).substring(0, 8); // never the key itself: tenants get logged
        } else {
            tenant = "anonymous";
        }
        long deadline = Long.MAX_VALUE;
        String d = headers.get(DEADLINE_MS);
        if (d != null) {
            try {
                long ms = Long.parseLong(d.trim());
                if (ms <= 0) {
                    throw new NumberFormatException();
                }
                deadline = nowNanos + Math.min(ms, 86_400_000L) * 1_000_000L;
            } catch (NumberFormatException e) {
                throw new ApiException(ApiError.invalidRequest("invalid_deadline", DEADLINE_MS + ": '" + d
                        + "' (expected: a positive number of milliseconds)"));
            }
        }
        return new RequestClass(priority, tenant, deadline, queueUpdates(headers, priority));
    }

    /** {@link #QUEUE_UPDATES}: 1 or true asks, 0 or false declines; absent: as its class is configured. */
    private boolean queueUpdates(HttpHeaders headers, int priority) throws ApiException {
        String v = headers.get(QUEUE_UPDATES);
        if (v == null) {
            return config.classPolicy(config.priorities().get(priority)).queueUpdates();
        }
        return switch (v.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "1", "true" -> true;
            case "0", "false" -> false;
            default -> throw new ApiException(ApiError.invalidRequest("invalid_queue_updates", QUEUE_UPDATES + ": '"
                    + v + "' (expected: 1 or 0)"));
        };
    }

    private static String bearer(String authorization) {
        if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return null;
        }
        String key = authorization.substring(7).trim();
        return key.isEmpty() ? null : key;
    }
}
