package dev.sluice.gateway.coordination;

import static dev.sluice.gateway.coordination.LeaseReplicas.QUEUE;
import static dev.sluice.gateway.coordination.LeaseReplicas.await;
import static dev.sluice.gateway.coordination.LeaseReplicas.queue;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.config.ConfigOverrides;
import dev.sluice.gateway.config.CoordinationConfig;
import dev.sluice.gateway.coordination.CoordinationStatus.Mode;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code rediss://} and passwords against real {@code redis-server}s, each replica's coordination read
 * from YAML (and the environment, for {@code password_env}) by the gateway's own config reader:
 * TLS with the CA in {@code coordination.redis.ca_file}, a replica trusting another CA, the password
 * from the environment ({@code requirepass}), a wrong one, and an ACL user named in the URL. A replica
 * that cannot get in says so in one WARN line, reports itself down and runs on budget / N; it never
 * throws out of its renewals.
 */
class RedisTlsAndAuthLeasesTest {
    private static final String WORKERS = """
            workers:
              prefill:
                - url: http://10.0.0.1:30000
              decode:
                - url: http://10.0.0.2:30001
            """;

    @TempDir
    Path dir;

    private static CoordinationConfig read(String id, String redisYaml, Map<String, String> env) {
        String yaml = WORKERS + "coordination:\n  redis: " + redisYaml + "\n  replica_id: " + id
                + "\n  lease_ttl: 2s\n  renew_interval: 200ms\n";
        return ConfigLoader.parse(yaml, "gw.yaml", ConfigOverrides.of(env, List.of())).coordination().orElseThrow();
    }

    private static X509Bundle ca(String name) throws Exception {
        return new CertificateBuilder().subject("CN=" + name).setIsCertificateAuthority(true).ecp256().buildSelfSigned();
    }

    private static List<String> warnings(LeaseReplicas fleet, String id) {
        return fleet.logLines().stream().filter(l -> l.startsWith("WARN") && l.contains("replica_id=" + id + " "))
                .toList();
    }

    @Test
    void tlsWithTheConfiguredCaLeasesAndAReplicaTrustingAnotherCaFailsVisiblyIntoFallback() throws Exception {
        X509Bundle ca = ca("Sluice test Redis CA");
        X509Bundle cert = new CertificateBuilder().subject("CN=localhost").addSanDnsName("localhost")
                .addSanIpAddress("127.0.0.1").ecp256().addExtendedKeyUsageServerAuth().buildIssuedBy(ca);
        Path caFile = Files.writeString(dir.resolve("ca.pem"), ca.getCertificatePEM());
        Path otherCa = Files.writeString(dir.resolve("other-ca.pem"), ca("Some other CA").getCertificatePEM());
        Path certFile = Files.writeString(dir.resolve("redis.crt"), cert.getCertificatePathPEM());
        Path keyFile = Files.writeString(dir.resolve("redis.key"), cert.getPrivateKeyPEM());
        int tlsPort = RedisServer.freePort();
        try (RedisServer redis = RedisServer.start(dir.resolve("redis"), List.of("--tls-port", String.valueOf(tlsPort),
                "--tls-cert-file", certFile.toString(), "--tls-key-file", keyFile.toString(), "--tls-ca-cert-file",
                caFile.toString(), "--tls-auth-clients", "no"));
             LeaseReplicas fleet = new LeaseReplicas()) {
            String url = "rediss://127.0.0.1:" + tlsPort;
            FleetLeases a = fleet.start(read("a", "{url: \"" + url + "\", ca_file: \"" + caFile + "\"}", Map.of()));
            FleetLeases b = fleet.start(read("b", "{url: \"" + url + "\", ca_file: \"" + caFile + "\"}", Map.of()));
            await("both leased over TLS, an even split", 20, () -> a.status().mode() == Mode.LEASED
                    && b.status().mode() == Mode.LEASED && queue(a) + queue(b) == QUEUE
                    && Math.abs(queue(a) - queue(b)) <= 1);
            // the leases are in the server behind the TLS port (the plain port is the test's own way in)
            assertThat(redis.cli("hlen", RedisLeaseStore.FLEET_KEY).trim()).isEqualTo("2");

            FleetLeases wrong = fleet.start(read("wrong", "{url: \"" + url + "\", ca_file: \"" + otherCa + "\"}",
                    Map.of()));
            await("a WARN line with the handshake's failure", 10, () -> warnings(fleet, "wrong").stream()
                    .anyMatch(l -> l.contains("coordination unreachable") && l.contains("certification path")));
            assertThat(wrong.status().up()).isFalse();
            await("budget / 1 after a lease time (it never saw a peer)", 10,
                    () -> wrong.status().mode() == Mode.FALLBACK);
            assertThat(queue(wrong)).isEqualTo(QUEUE);
            assertThat(wrong.status().reason()).contains("unable to find valid certification path");
            assertThat(warnings(fleet, "wrong")).anyMatch(l -> l.contains("coordination lease expired")
                    && l.contains("running_on=budget/1"));
            // the two that trust the right CA never counted it
            assertThat(a.status().replicas()).isEqualTo(2);
            assertThat(a.status().mode()).isEqualTo(Mode.LEASED);
        }
    }

    @Test
    void thePasswordComesFromTheEnvironmentAWrongOneFallsBackAndAnAclUserWorks() throws Exception {
        try (RedisServer redis = RedisServer.start(dir.resolve("redis"), List.of("--requirepass", "right-pw"));
             LeaseReplicas fleet = new LeaseReplicas()) {
            // a user that may touch the coordination's keys only (the hash tag {sluice}), with a password of its own
            redis.cli("--no-auth-warning", "-a", "right-pw", "acl", "setuser", "sluice", "on", ">user-pw",
                    "~{sluice}:*", "+@all");
            String url = "redis://127.0.0.1:" + redis.port();
            FleetLeases a = fleet.start(read("a", "{url: \"" + url + "\", password_env: SLUICE_REDIS_PASSWORD}",
                    Map.of("SLUICE_REDIS_PASSWORD", "right-pw")));
            FleetLeases user = fleet.start(read("user", "{url: \"" + url + "\", username: sluice, password_env: REDIS_PW}",
                    Map.of("REDIS_PW", "user-pw")));
            FleetLeases wrong = fleet.start(read("wrong", "{url: \"" + url + "\", password_env: SLUICE_REDIS_PASSWORD}",
                    Map.of("SLUICE_REDIS_PASSWORD", "not-the-pw")));
            FleetLeases none = fleet.start(read("none", "{url: \"" + url + "\"}", Map.of()));
            await("the default user and the ACL user leased, an even split", 20, () -> a.status().mode() == Mode.LEASED
                    && user.status().mode() == Mode.LEASED && a.status().replicas() == 2
                    && queue(a) + queue(user) == QUEUE && Math.abs(queue(a) - queue(user)) <= 1);

            await("the wrong password and the missing one in fallback", 10,
                    () -> wrong.status().mode() == Mode.FALLBACK && none.status().mode() == Mode.FALLBACK);
            await("a WARN line with the server's answer", 10, () -> warnings(fleet, "wrong").stream()
                    .anyMatch(l -> l.contains("coordination unreachable") && l.contains("WRONGPASS")));
            assertThat(fleet.logLines()).noneMatch(l -> l.contains("not-the-pw") || l.contains("right-pw"));
            assertThat(wrong.status().reason()).contains("WRONGPASS");
            assertThat(none.status().reason()).contains("NOAUTH");
            assertThat(wrong.status().up()).isFalse();
            assertThat(queue(wrong)).isEqualTo(QUEUE);
            assertThat(a.status().peers()).extracting(LeaseReply.Peer::replicaId).containsExactly("a", "user");
        }
    }
}
