package dev.sluice.gateway.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.coordination.CoordinationStatus;
import dev.sluice.gateway.coordination.RedisServerAccess;
import dev.sluice.gateway.testing.PdTestbed;
import dev.sluice.testbed.sim.SimConfig;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A gateway whose {@code coordination.redis.ca_file} does not hold the CA of the (real, TLS-only for it)
 * Redis: it never gets a lease, and keeps serving on budget / 1 after the lease time, saying so in
 * {@code sluice_coordination_up 0}, {@code sluice_coordination_fallback 1} and {@code /readiness}
 * (still ready).
 */
class CoordinationUntrustedRedisEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static X509Bundle ca(String name) throws Exception {
        return new CertificateBuilder().subject("CN=" + name).setIsCertificateAuthority(true).ecp256().buildSelfSigned();
    }

    @Test
    void aGatewayThatCannotVerifyRedisKeepsServingOnItsWholeBudgetAndSaysSo(@TempDir Path dir) throws Exception {
        X509Bundle ca = ca("Sluice test Redis CA");
        X509Bundle cert = new CertificateBuilder().subject("CN=localhost").addSanDnsName("localhost")
                .addSanIpAddress("127.0.0.1").ecp256().addExtendedKeyUsageServerAuth().buildIssuedBy(ca);
        Path caFile = Files.writeString(dir.resolve("ca.pem"), ca.getCertificatePEM());
        Path otherCa = Files.writeString(dir.resolve("other-ca.pem"), ca("Some other CA").getCertificatePEM());
        Path certFile = Files.writeString(dir.resolve("redis.crt"), cert.getCertificatePathPEM());
        Path keyFile = Files.writeString(dir.resolve("redis.key"), cert.getPrivateKeyPEM());
        int tlsPort = RedisServerAccess.freePort();
        String coordination = "coordination:\n  redis: {url: \"rediss://127.0.0.1:" + tlsPort + "\", ca_file: \""
                + otherCa + "\"}\n  replica_id: gw-untrusting\n  lease_ttl: 2s\n  renew_interval: 500ms\n";
        try (RedisServerAccess redis = RedisServerAccess.start(dir.resolve("redis"), List.of("--tls-port",
                String.valueOf(tlsPort), "--tls-cert-file", certFile.toString(), "--tls-key-file", keyFile.toString(),
                "--tls-ca-cert-file", caFile.toString(), "--tls-auth-clients", "no"));
             PdTestbed bed = PdTestbed.start(1, 1, SimConfig.defaults(), "{first_token: 10s, request: 30s}",
                     coordination)) {
            assertThat(PdTestbed.eventually(Duration.ofSeconds(10), () -> bed.gateway.coordination().orElseThrow()
                    .mode() == CoordinationStatus.Mode.FALLBACK)).as("fallback after the lease time").isTrue();
            CoordinationStatus c = bed.gateway.coordination().orElseThrow();
            assertThat(c.up()).isFalse();
            assertThat(c.reason()).contains("certification path");

            HttpResponse<String> r = bed.http.send(PdTestbed.postRequest(bed.uri("/v1/completions"),
                    "{\"model\":\"m\",\"prompt\":\"hello\",\"max_tokens\":4}"), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);

            assertThat(bed.metric("sluice_coordination_up")).isEqualTo(0.0);
            assertThat(bed.metric("sluice_coordination_fallback")).isEqualTo(1.0);
            HttpResponse<String> ready = bed.get("/readiness");
            assertThat(ready.statusCode()).as(ready.body()).isEqualTo(200);
            JsonNode coord = JSON.readTree(ready.body()).path("coordination");
            assertThat(coord.path("up").asBoolean(true)).isFalse();
            assertThat(coord.path("mode").asText()).isEqualTo("fallback");
        }
    }
}
