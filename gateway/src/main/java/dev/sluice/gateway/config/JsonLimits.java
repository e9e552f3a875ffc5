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
    public static final JsonLimits DEFAULTS = builder().maxDepth(64).maxStringLength(16 << 20).maxNumberLength(64)
            .maxNameLength(256).build();

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return builder().maxDepth(maxDepth).maxStringLength(maxStringLength).maxNumberLength(maxNumberLength)
                .maxNameLength(maxNameLength);
    }

    /** Four ints in a row, named and checked with the lower bounds of {@code http.json:}. */
    public static final class Builder {
        private static final String J = "http.json.";
        private Integer maxDepth;
        private Integer maxStringLength;
        private Integer maxNumberLength;
        private Integer maxNameLength;

        private Builder() {
        }

        public Builder maxDepth(int v) {
            maxDepth = KeyCheck.atLeast(J + "max_depth", v, 4);
            return this;
        }

        public Builder maxStringLength(int v) {
            maxStringLength = KeyCheck.atLeast(J + "max_string_length", v, 1024);
            return this;
        }

        public Builder maxNumberLength(int v) {
            maxNumberLength = KeyCheck.atLeast(J + "max_number_length", v, 16);
            return this;
        }

        public Builder maxNameLength(int v) {
            maxNameLength = KeyCheck.atLeast(J + "max_name_length", v, 16);
            return this;
        }

        public JsonLimits build() {
            return new JsonLimits(KeyCheck.set(J + "max_depth", maxDepth), KeyCheck.set(J + "max_string_length",
                    maxStringLength), KeyCheck.set(J + "max_number_length", maxNumberLength),
                    KeyCheck.set(J + "max_name_length", maxNameLength));
        }
    }
}
