package dev.sluice.gateway.tls;

import dev.sluice.gateway.config.TlsServerConfig;
import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SupportedCipherSuiteFilter;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.Arrays;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client listener's TLS: an {@link SslContext} built from PEM files, swapped atomically when
 * the files change (new connections get the new certificate, open ones keep theirs), and each
 * connection's {@link SslHandler} with a handshake timeout. A replacement that does not load (a
 * half-written file, a key that does not parse) is refused and the running certificate kept.
 */
public final class ServerTls {
    private static final Logger log = LoggerFactory.getLogger(ServerTls.class);

    /** What a reload check found. */
    public enum Result { UNCHANGED, RELOADED, FAILED }

    private final TlsServerConfig config;
    private volatile SslContext context;
    private volatile Instant notAfter;
    private volatile String subject;
    private byte[] stamp; // digest of both files' bytes: what "changed" means

    private ServerTls(TlsServerConfig config) {
        this.config = config;
    }

    /** Loads the configured pair; throws when it does not load (the gateway must not start without it). */
    public static ServerTls load(TlsServerConfig config) throws IOException {
        ServerTls t = new ServerTls(config);
        t.stamp = t.digest();
        t.install();
        log.info("tls enabled provider={} subject=\"{}\" not_after={} protocols={}", TlsDefaults.describeProvider(),
                t.subject, t.notAfter, String.join(",", TlsDefaults.PROTOCOLS));
        return t;
    }

    public SslHandler newHandler(ByteBufAllocator alloc) {
        SslHandler h = context.newHandler(alloc);
        h.setHandshakeTimeoutMillis(TlsDefaults.HANDSHAKE_TIMEOUT_MILLIS);
        return h;
    }

    public Instant notAfter() {
        return notAfter;
    }

    public String provider() {
        return TlsDefaults.provider().name().toLowerCase(java.util.Locale.ROOT);
    }

    /**
     * Checks the files; reloads them when their content changed. Called by one thread at a time (the
     * gateway's file IO thread: it reads files, so never on an event loop).
     */
    public Result reloadIfChanged() {
        byte[] now;
        try {
            now = digest();
        } catch (IOException e) {
            log.warn("tls reload failed: cannot read {} or {}: {}", config.certChain(), config.privateKey(), e.toString());
            return Result.FAILED;
        }
        if (Arrays.equals(now, stamp)) {
            return Result.UNCHANGED;
        }
        try {
            install();
            stamp = now;
            log.info("tls certificate reloaded subject=\"{}\" not_after={}", subject, notAfter);
            return Result.RELOADED;
        } catch (IOException | RuntimeException e) {
            stamp = now; // do not retry the same broken pair every check; a new write changes the digest
            log.warn("tls reload refused, the running certificate stays: {}", e.toString());
            return Result.FAILED;
        }
    }

    private void install() throws IOException {
        X509Certificate leaf = leaf(config.certChain());
        SslContext next = SslContextBuilder.forServer(config.certChain().toFile(), config.privateKey().toFile())
                .sslProvider(TlsDefaults.provider())
                .protocols(TlsDefaults.PROTOCOLS)
                .ciphers(TlsDefaults.CIPHERS, SupportedCipherSuiteFilter.INSTANCE)
                .applicationProtocolConfig(new ApplicationProtocolConfig(ApplicationProtocolConfig.Protocol.ALPN,
                        ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                        ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                        ApplicationProtocolNames.HTTP_1_1))
                .build();
        context = next;
        notAfter = leaf.getNotAfter().toInstant();
        subject = leaf.getSubjectX500Principal().getName();
    }

    private static X509Certificate leaf(Path chain) throws IOException {
        try (InputStream in = Files.newInputStream(chain)) {
            return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
        } catch (java.security.cert.CertificateException e) {
            throw new IOException("no X.509 certificate in " + chain + ": " + e.getMessage(), e);
        }
    }

    private byte[] digest() throws IOException {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(Files.readAllBytes(config.certChain()));
            md.update(Files.readAllBytes(config.privateKey()));
            return md.digest();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
