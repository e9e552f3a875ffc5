package dev.sluice.gateway.config;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * Fleet coordination (YAML section {@code coordination:}, read by {@link CoordinationConfigReader}):
 * several gateway replicas share one admission budget through leases held in Redis or Valkey
 * (docs/scale-out.md). Absent: the replica admits the whole budget alone, as before.
 *
 * @param url           {@code redis://host:port} or {@code rediss://host:port} (TLS); never with a user part
 * @param password      from the environment variable {@code password_env} names, never from the file
 * @param cluster       Redis Cluster: every key shares one hash tag, so the one script still runs on one node
 * @param caFile        {@code rediss://} only: PEM file of the CAs the server's certificate must chain to; empty:
 *                      the JDK's trust store. The host name is verified either way.
 * @param replicaId     this replica's name among its peers; empty: host name + "-" + pid, chosen at start
 * @param leaseTtl      a replica that stops renewing has its shares freed after this
 * @param renewInterval how often leases are renewed and demand reported (one round trip)
 * @param username      the Redis ACL user to authenticate as with {@code password}; empty: the default user
 */
public record CoordinationConfig(String url, Optional<Secret> password, boolean cluster, Optional<Path> caFile,
                                 String replicaId, Duration leaseTtl, Duration renewInterval,
                                 Optional<String> username) {
    public CoordinationConfig {
        Objects.requireNonNull(url, "url");
        if (url.indexOf('@') >= 0) {
            // the user part may be a password (Lettuce reads redis://secret@host so): never echoed
            throw KeyCheck.rejected("coordination.redis.url", "(a URL with credentials, not shown)",
                    CoordinationConfigReader.CREDENTIALS);
        }
        Objects.requireNonNull(username, "username");
        Objects.requireNonNull(password, "password");
        Objects.requireNonNull(caFile, "caFile");
        if (caFile.isPresent() && !url.startsWith("rediss://")) {
            throw KeyCheck.rejected("coordination.redis.ca_file", caFile.get().toString(),
                    "only with a rediss:// coordination.redis.url");
        }
        Objects.requireNonNull(replicaId, "replicaId");
        KeyCheck.atLeast("coordination.lease_ttl", leaseTtl, Duration.ofSeconds(1));
        KeyCheck.atLeast("coordination.renew_interval", renewInterval, Duration.ofMillis(100));
        if (renewInterval.multipliedBy(2).compareTo(leaseTtl) > 0) {
            // one lost renewal must not let the lease lapse
            throw KeyCheck.rejected("coordination.renew_interval", Durations.format(renewInterval),
                    "at most half of coordination.lease_ttl (" + Durations.format(leaseTtl) + ")");
        }
    }

    /** With the default user (no {@code coordination.redis.username}). */
    public CoordinationConfig(String url, Optional<Secret> password, boolean cluster, Optional<Path> caFile,
                              String replicaId, Duration leaseTtl, Duration renewInterval) {
        this(url, password, cluster, caFile, replicaId, leaseTtl, renewInterval, Optional.empty());
    }

    /** True for {@code rediss://}. */
    public boolean tls() {
        return url.startsWith("rediss://");
    }
}
