package dev.sluice.gateway.config;

/**
 * Limits on a client's JSON body, enforced while it is parsed (Jackson's StreamReadConstraints), so a
 * hostile document costs at most its bytes: no deep recursion, no megabyte-long number parsed into a
 * BigDecimal, no huge key. The document's size is bounded before that by {@code http.max_request_body}.
 *
 * @param maxDepth        deepest nesting of arrays and objects
 * @param maxStringLength longest string value, in characters
 * @param maxNumberLength longest number literal, in characters
 * @param maxNameLength   longest object key, in characters
 */
public record JsonLimits(int maxDepth, int maxStringLength, int maxNumberLength, int maxNameLength) {
    /** The shipped defaults (also what {@code config/gateway.yaml} documents). */
    public static final JsonLimits DEFAULTS = new JsonLimits(64, 16 << 20, 64, 256);
}
