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
    public static final ClientLimits DEFAULTS = new ClientLimits(8192, 16384, 100, Duration.ofSeconds(10),
            Duration.ofSeconds(30), Duration.ofSeconds(60), 10_000);
}
