package dev.sluice.gateway.coordination;

/**
 * One budget the fleet shares, by the name it has in Redis: {@code queue}, {@code pending_tokens},
 * per worker URL {@code prefill_requests|url}, {@code prefill_tokens|url}, {@code decode_streams|url},
 * and per rate-limited tenant {@code tenant_tokens|tenant} (its tokens per minute).
 *
 * @param worker the worker URL, or the tenant, the resource is of; empty for the fleet-wide ones
 */
public record Resource(Kind kind, String worker) {
    /** What a resource limits, and the admission key whose value is its fleet capacity. */
    public enum Kind {
        QUEUE("queue", "admission.max_queued_requests"),
        PENDING_TOKENS("pending_tokens", "admission.max_pending_tokens"),
        PREFILL_REQUESTS("prefill_requests", "admission.prefill.max_inflight_requests"),
        PREFILL_TOKENS("prefill_tokens", "admission.prefill.max_inflight_tokens"),
        DECODE_STREAMS("decode_streams", "admission.decode.max_inflight_streams"),
        TENANT_TOKENS("tenant_tokens", "admission.tenant_limits.*.tokens_per_minute");

        private final String label;
        private final String key;

        Kind(String label, String key) {
            this.label = label;
            this.key = key;
        }

        public String label() {
            return label;
        }

        public String key() {
            return key;
        }
    }

    public static final Resource QUEUE = new Resource(Kind.QUEUE, "");
    public static final Resource PENDING_TOKENS = new Resource(Kind.PENDING_TOKENS, "");

    /** The name in Redis and in /admin/state. */
    public String name() {
        return worker.isEmpty() ? kind.label : kind.label + "|" + worker;
    }

    /** The resource a Redis name stands for, or null for a name this version does not know. */
    static Resource parse(String name) {
        int bar = name.indexOf('|');
        String label = bar < 0 ? name : name.substring(0, bar);
        for (Kind k : Kind.values()) {
            if (k.label.equals(label)) {
                return new Resource(k, bar < 0 ? "" : name.substring(bar + 1));
            }
        }
        return null;
    }
}
