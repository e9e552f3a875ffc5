package dev.sluice.gateway.tls;

import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslProvider;
import java.util.List;

/**
 * The protocol and cipher choices of both TLS sides: TLS 1.3 and 1.2 only, and for 1.2 Mozilla's
 * "intermediate" list (forward-secret ECDHE with AES-GCM or ChaCha20-Poly1305; no CBC, no RSA key
 * exchange, no SHA-1); TLS 1.3's own suites are all AEAD. OpenSSL (netty-tcnative's statically
 * linked BoringSSL) where it loads, else the JDK's provider: same protocols and ciphers either way.
 */
final class TlsDefaults {
    static final String[] PROTOCOLS = {"TLSv1.3", "TLSv1.2"};

    static final List<String> CIPHERS = List.of(
            "TLS_AES_128_GCM_SHA256",
            "TLS_AES_256_GCM_SHA384",
            "TLS_CHACHA20_POLY1305_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256");

    /** A client that never finishes its handshake holds a connection this long at most. */
    static final long HANDSHAKE_TIMEOUT_MILLIS = 10_000;

    private TlsDefaults() {
    }

    static SslProvider provider() {
        return OpenSsl.isAvailable() ? SslProvider.OPENSSL : SslProvider.JDK;
    }

    /** For the log: which implementation, and why not OpenSSL when not. */
    static String describeProvider() {
        return OpenSsl.isAvailable() ? "openssl (" + OpenSsl.versionString() + ")"
                : "jdk (OpenSSL unavailable: " + OpenSsl.unavailabilityCause() + ")";
    }
}
