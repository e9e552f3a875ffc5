package dev.sluice.gateway.config;

import java.time.Duration;

/**
 * What one client connection may cost before the gateway refuses it: the size of a request's head,
 * how long it may take to arrive, how long a keep-alive connection may sit idle, and how many
 * client connections may be open at once.
 *
 * @param maxInitialLine  request line (method, target, version), bytes: past it 414
 * @param maxHeaderSize   all header lines together, bytes: past it 431
 * @param maxHeaders      number of header fields: past it 431
 * @param headerTimeout   first byte of a request to the end of its headers: past it 408, closed
 * @param bodyTimeout     end of the headers to the end of the body: past it 408, closed
 * @param idleTimeout     a keep-alive connection with no request in progress is closed after this
 * @param maxConnections  open client connections; past it a new one gets 503 and is closed
 */
public record ClientLimits(int maxInitialLine, int maxHeaderSize, int maxHeaders, Duration headerTimeout,
                           Duration bodyTimeout, Duration idleTimeout, int maxConnections) {
    public static final ClientLimits DEFAULTS = builder().maxInitialLine(8192).maxHeaderSize(16384).maxHeaders(100)
            .headerTimeout(Duration.ofSeconds(10)).bodyTimeout(Duration.ofSeconds(30)).idleTimeout(Duration.ofSeconds(60))
            .maxConnections(10_000).build();

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return builder().maxInitialLine(maxInitialLine).maxHeaderSize(maxHeaderSize).maxHeaders(maxHeaders)
                .headerTimeout(headerTimeout).bodyTimeout(bodyTimeout).idleTimeout(idleTimeout)
                .maxConnections(maxConnections);
    }

    /** Four ints and three durations, named and checked with the lower bounds of their {@code http.*} keys. */
    public static final class Builder {
        private static final Duration MIN = Duration.ofMillis(10);
        private Integer maxInitialLine;
        private Integer maxHeaderSize;
        private Integer maxHeaders;
        private Duration headerTimeout;
        private Duration bodyTimeout;
        private Duration idleTimeout;
        private Integer maxConnections;

        private Builder() {
        }

        public Builder maxInitialLine(int v) {
            maxInitialLine = KeyCheck.atLeast("http.max_initial_line", v, 256);
            return this;
        }

        public Builder maxHeaderSize(int v) {
            maxHeaderSize = KeyCheck.atLeast("http.max_header_size", v, 1024);
            return this;
        }

        public Builder maxHeaders(int v) {
            maxHeaders = KeyCheck.atLeast("http.max_headers", v, 8);
            return this;
        }

        public Builder headerTimeout(Duration v) {
            headerTimeout = KeyCheck.atLeast("http.header_timeout", v, MIN);
            return this;
        }

        public Builder bodyTimeout(Duration v) {
            bodyTimeout = KeyCheck.atLeast("http.body_timeout", v, MIN);
            return this;
        }

        public Builder idleTimeout(Duration v) {
            idleTimeout = KeyCheck.atLeast("http.idle_timeout", v, MIN);
            return this;
        }

        public Builder maxConnections(int v) {
            maxConnections = KeyCheck.atLeast("http.max_connections", v, 1);
            return this;
        }

        public ClientLimits build() {
            return new ClientLimits(KeyCheck.set("http.max_initial_line", maxInitialLine),
                    KeyCheck.set("http.max_header_size", maxHeaderSize), KeyCheck.set("http.max_headers", maxHeaders),
                    KeyCheck.set("http.header_timeout", headerTimeout), KeyCheck.set("http.body_timeout", bodyTimeout),
                    KeyCheck.set("http.idle_timeout", idleTimeout), KeyCheck.set("http.max_connections", maxConnections));
        }
    }
}
