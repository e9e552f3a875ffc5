package dev.sluice.gateway.tls;

import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SupportedCipherSuiteFilter;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;

/**
 * TLS towards {@code https://} workers: their certificate must chain to {@code upstream.ca_file}
 * (or the JDK's trust store) and name the worker's host (endpoint identification "HTTPS", with SNI).
 */
public final class ClientTls {
    private final SslContext context;

    private ClientTls(SslContext context) {
        this.context = context;
    }

    public static ClientTls create(Optional<Path> caFile) throws IOException {
        SslContextBuilder b = SslContextBuilder.forClient()
                .sslProvider(TlsDefaults.provider())
                .protocols(TlsDefaults.PROTOCOLS)
                .ciphers(TlsDefaults.CIPHERS, SupportedCipherSuiteFilter.INSTANCE)
                .endpointIdentificationAlgorithm("HTTPS");
        if (caFile.isPresent()) {
            b.trustManager(caFile.get().toFile());
        }
        return new ClientTls(b.build());
    }

    /** A handler for a connection to {@code host:port}: SNI and the host name checked against the certificate. */
    public SslHandler newHandler(ByteBufAllocator alloc, String host, int port) {
        SslHandler h = context.newHandler(alloc, host, port);
        SSLEngine engine = h.engine();
        SSLParameters p = engine.getSSLParameters();
        p.setEndpointIdentificationAlgorithm("HTTPS");
        engine.setSSLParameters(p);
        h.setHandshakeTimeoutMillis(TlsDefaults.HANDSHAKE_TIMEOUT_MILLIS);
        return h;
    }
}
