package dev.sluice.gateway.config;

import java.nio.file.Path;
import java.time.Duration;

/**
 * TLS on the client listener ({@code listen.tls}): the certificate chain and private key as PEM
 * files, and how often their files are checked for a replacement (a renewed certificate is served
 * to new connections without a restart).
 */
public record TlsServerConfig(Path certChain, Path privateKey, Duration reloadCheck) {
}
