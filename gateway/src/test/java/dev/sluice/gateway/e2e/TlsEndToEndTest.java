package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimCluster;
import dev.sluice.testbed.sim.SimConfig;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigInteger;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS on both sides, with real certificates from a test CA: the client listener serves TLS 1.3
 * with modern ciphers only, refuses plain HTTP and weak suites without harm, reloads a renewed
 * certificate for new connections while open ones go on, keeps the old one when the new files do
 * not load; and https:// workers are reached through TLS checked against upstream.ca_file and their
 * host name.
 */
class TlsEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String BODY = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}";

    private static X509Bundle ca(String name) throws Exception {
        return new CertificateBuilder().subject("CN=" + name).setIsCertificateAuthority(true).ecp256().buildSelfSigned();
    }

    private static X509Bundle server(X509Bundle ca, long serial, boolean withIp) throws Exception {
        CertificateBuilder b = new CertificateBuilder().subject("CN=localhost, O=Sluice test " + serial)
                .serial(BigInteger.valueOf(serial)).addSanDnsName("localhost").ecp256().addExtendedKeyUsageServerAuth();
        if (withIp) {
            b.addSanIpAddress("127.0.0.1");
        }
        return b.buildIssuedBy(ca);
    }

    private static void writePem(X509Bundle b, Path chain, Path key) throws IOException {
        Path tmpChain = chain.resolveSibling(chain.getFileName() + ".tmp");
        Path tmpKey = key.resolveSibling(key.getFileName() + ".tmp");
        Files.writeString(tmpChain, b.getCertificatePathPEM());
        Files.writeString(tmpKey, b.getPrivateKeyPEM());
        Files.move(tmpChain, chain, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        Files.move(tmpKey, key, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    private static SSLContext trusting(X509Bundle ca) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setCertificateEntry("ca", ca.getCertificate());
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }

    @Test
    void theClientListenerServesModernTlsAndReloadsItsCertificate(@TempDir Path dir) throws Exception {
        X509Bundle ca = ca("Sluice Test CA");
        Path chain = dir.resolve("fullchain.pem");
        Path key = dir.resolve("key.pem");
        writePem(server(ca, 1001, true), chain, key);
        String listen = "listen: {host: 127.0.0.1, port: 0, internal_endpoints: true, tls: {cert_chain: " + chain
                + ", private_key: " + key + ", reload_check: 100ms}}\n";
        try (PdTestbed bed = PdTestbed.start(dev.sluice.testbed.sim.SimMode.SGLANG, 1, 1, SimConfig.defaults(),
                "{connect: 2s}", listen)) {
            SSLContext client = trusting(ca);
            HttpClient https = HttpClient.newBuilder().sslContext(client).connectTimeout(Duration.ofSeconds(5)).build();
            URI uri = URI.create("https://localhost:" + bed.port() + "/v1/chat/completions");
            HttpResponse<String> ok = https.send(HttpRequest.newBuilder(uri).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(BODY)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(ok.statusCode()).isEqualTo(200);
            assertThat(JSON.readTree(ok.body()).at("/choices/0/message/content").isTextual()).isTrue();

            // TLS 1.3 by default; the served certificate is the one configured
            SSLSocket open = (SSLSocket) client.getSocketFactory().createSocket("localhost", bed.port());
            open.startHandshake();
            assertThat(open.getSession().getProtocol()).isEqualTo("TLSv1.3");
            assertThat(((X509Certificate) open.getSession().getPeerCertificates()[0]).getSerialNumber().longValue())
                    .isEqualTo(1001);

            // a TLS 1.2 client offering only a CBC suite (not in the policy) is refused
            try (SSLSocket weak = (SSLSocket) client.getSocketFactory().createSocket("localhost", bed.port())) {
                weak.setEnabledProtocols(new String[]{"TLSv1.2"});
                weak.setEnabledCipherSuites(new String[]{"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"});
                assertThatThrownBy(weak::startHandshake).isInstanceOf(SSLHandshakeException.class);
            }
            // but TLS 1.2 with an AEAD suite is served
            try (SSLSocket tls12 = (SSLSocket) client.getSocketFactory().createSocket("localhost", bed.port())) {
                tls12.setEnabledProtocols(new String[]{"TLSv1.2"});
                tls12.startHandshake();
                assertThat(tls12.getSession().getCipherSuite()).contains("GCM");
            }
            // plain HTTP to the TLS port: no answer a client could take for HTTP, the connection closes
            try (Socket plain = new Socket("127.0.0.1", bed.port())) {
                plain.setSoTimeout(15_000);
                plain.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
                        + BODY.length() + "\r\n\r\n" + BODY).getBytes(StandardCharsets.US_ASCII));
                byte[] got = plain.getInputStream().readAllBytes();
                assertThat(new String(got, StandardCharsets.ISO_8859_1)).doesNotContain("HTTP/1.1 200");
            } catch (java.net.SocketException reset) {
                // a reset is a refusal too
            }
            assertThat(PdTestbed.eventually(Duration.ofSeconds(5),
                    () -> metric(https, bed, "sluice_tls_handshake_failures_total") >= 2)).isTrue();

            // renewed certificate: new connections get it within reload_check, the open one goes on
            writePem(server(ca, 2002, true), chain, key);
            assertThat(PdTestbed.eventually(Duration.ofSeconds(5), () -> servedSerial(client, bed.port()) == 2002)).isTrue();
            assertThat(exchange(open)).startsWith("HTTP/1.1 200");
            open.close();
            assertThat(metric(https, bed, "sluice_tls_reloads_total{result=\"reloaded\"}")).isEqualTo(1);

            // a broken replacement is refused; the renewed certificate stays
            Files.writeString(chain, "-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n");
            assertThat(PdTestbed.eventually(Duration.ofSeconds(5),
                    () -> metric(https, bed, "sluice_tls_reloads_total{result=\"failed\"}") == 1)).isTrue();
            assertThat(servedSerial(client, bed.port())).isEqualTo(2002);
            assertThat(metric(https, bed, "sluice_tls_certificate_expiry_seconds")).isGreaterThan(
                    System.currentTimeMillis() / 1000.0);
            bed.assertQuiescent();
        }
    }

    @Test
    void httpsWorkersAreCheckedAgainstTheCaFileAndTheirHostName(@TempDir Path dir) throws Exception {
        X509Bundle ca = ca("Worker CA");
        X509Bundle other = ca("Someone Else's CA");
        Path caFile = dir.resolve("ca.pem");
        Files.writeString(caFile, ca.getCertificatePEM());
        Path otherCa = dir.resolve("other-ca.pem");
        Files.writeString(otherCa, other.getCertificatePEM());
        X509Bundle workerCert = server(ca, 7, false); // names "localhost" only
        try (SimCluster sim = SimCluster.start(1, 1, 0, SimConfig.defaults().withHealthGeneration(false));
             TlsFront prefill = new TlsFront(workerCert, sim.prefills().get(0).port());
             TlsFront decode = new TlsFront(workerCert, sim.decodes().get(0).port())) {
            String ok = yaml("localhost", prefill, decode, sim, caFile);
            try (GatewayServer gw = new GatewayServer(ConfigLoader.parse(ok, "test")).start()) {
                assertThat(gw.awaitReady(10, TimeUnit.SECONDS)).as("workers healthy over https").isTrue();
                HttpResponse<String> r = post(gw.port());
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(prefill.connections()).isPositive();
                assertThat(decode.connections()).isPositive();
            }
            // the same workers by an address their certificate does not name, or trusted through another CA: never used
            for (String bad : List.of(yaml("127.0.0.1", prefill, decode, sim, caFile), yaml("localhost", prefill, decode, sim,
                    otherCa))) {
                try (GatewayServer gw = new GatewayServer(ConfigLoader.parse(bad, "test")).start()) {
                    assertThat(gw.awaitReady(2, TimeUnit.SECONDS)).isFalse();
                    HttpResponse<String> r = post(gw.port());
                    assertThat(r.statusCode()).isEqualTo(503);
                    assertThat(JSON.readTree(r.body()).at("/error/code").asText()).isEqualTo("no_capacity");
                }
            }
        }
    }

    private static String yaml(String host, TlsFront prefill, TlsFront decode, SimCluster sim, Path caFile) {
        return "listen: {host: 127.0.0.1, port: 0}\nadmin: {enabled: false}\n"
                + "workers:\n  prefill:\n    - url: https://" + host + ":" + prefill.port() + "\n      bootstrap_port: "
                + sim.prefills().get(0).bootstrapPort() + "\n  decode:\n    - url: https://" + host + ":" + decode.port() + "\n"
                + "upstream: {ca_file: " + caFile + "}\n"
                + "health: {interval: 200ms, timeout: 1s, generate_interval: 0s}\ntelemetry: {interval: 200ms}\n";
    }

    private static HttpResponse<String> post(int port) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                + "/v1/chat/completions")).header("Content-Type", "application/json").timeout(Duration.ofSeconds(20))
                .POST(HttpRequest.BodyPublishers.ofString(BODY)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static long servedSerial(SSLContext client, int port) {
        try (SSLSocket s = (SSLSocket) client.getSocketFactory().createSocket("localhost", port)) {
            s.startHandshake();
            return ((X509Certificate) s.getSession().getPeerCertificates()[0]).getSerialNumber().longValue();
        } catch (IOException e) {
            return -1;
        }
    }

    private static String exchange(SSLSocket s) throws IOException {
        s.setSoTimeout(10_000);
        s.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + BODY.length() + "\r\n\r\n" + BODY).getBytes(StandardCharsets.US_ASCII));
        byte[] buf = new byte[4096];
        int n = s.getInputStream().read(buf);
        return new String(buf, 0, Math.max(0, n), StandardCharsets.ISO_8859_1);
    }

    private static double metric(HttpClient https, PdTestbed bed, String sample) {
        try {
            String text = https.send(HttpRequest.newBuilder(URI.create("https://localhost:" + bed.port() + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            for (String line : text.split("\n")) {
                int sp = line.lastIndexOf(' ');
                if (sp > 0 && line.substring(0, sp).replace(",}", "}").equals(sample)) {
                    return Double.parseDouble(line.substring(sp + 1));
                }
            }
            return 0;
        } catch (IOException | InterruptedException e) {
            return -1;
        }
    }

    /** A TLS-terminating front for a simulated worker: what an https:// inference server looks like. */
    private static final class TlsFront implements AutoCloseable {
        private final SSLServerSocket server;
        private final int target;
        private final List<Socket> sockets = new ArrayList<>();
        private volatile int connections;

        TlsFront(X509Bundle cert, int target) throws Exception {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            ks.setKeyEntry("k", cert.getKeyPair().getPrivate(), new char[0], cert.getCertificatePath());
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, new char[0]);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(kmf.getKeyManagers(), null, null);
            this.server = (SSLServerSocket) ctx.getServerSocketFactory().createServerSocket();
            this.server.bind(new InetSocketAddress("127.0.0.1", 0));
            this.target = target;
            Thread t = new Thread(this::accept, "tls-front");
            t.setDaemon(true);
            t.start();
        }

        int port() {
            return server.getLocalPort();
        }

        int connections() {
            return connections;
        }

        private void accept() {
            while (!server.isClosed()) {
                try {
                    Socket in = server.accept();
                    Socket out = new Socket("127.0.0.1", target);
                    synchronized (sockets) {
                        sockets.add(in);
                        sockets.add(out);
                    }
                    connections++;
                    pump(in, out);
                    pump(out, in);
                } catch (IOException e) {
                    return;
                }
            }
        }

        private static void pump(Socket from, Socket to) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[16384];
                try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                    int n;
                    while ((n = in.read(buf)) >= 0) {
                        out.write(buf, 0, n);
                        out.flush();
                    }
                } catch (IOException done) {
                    // either side closed
                } finally {
                    try {
                        from.close();
                        to.close();
                    } catch (IOException ignored) {
                        // closing
                    }
                }
            }, "tls-front-pump");
            t.setDaemon(true);
            t.start();
        }

        @Override
        public void close() throws IOException {
            server.close();
            synchronized (sockets) {
                for (Socket s : sockets) {
                    s.close();
                }
            }
        }
    }
}
