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
 * @param fleet         the fleet's name: its key in Redis is {@code {sluice:<fleet>}:fleet}; empty: {@code {sluice}:fleet}
 *                      (the key of every gateway before fleets had names, so a rolling upgrade stays one fleet)
 * @param expectedReplicas the N of budget / N before this replica has seen any member list (Redis unreachable at
 *                      start); 0: unset (the fleet's last known membership, else 1)
 * @param username      the Redis ACL user to authenticate as with {@code password}; empty: the default user
 */
public record CoordinationConfig(String url, Optional<Secret> password, boolean cluster, Optional<Path> caFile,
                                 String replicaId, Duration leaseTtl, Duration renewInterval, String fleet,
                                 int expectedReplicas, Optional<String> username) {
    /** A fleet without a name, no expected replica count, the default user (tests, and older sections). */
    public CoordinationConfig(String url, Optional<Secret> password, boolean cluster, Optional<Path> caFile,
                              String replicaId, Duration leaseTtl, Duration renewInterval) {
        this(url, password, cluster, caFile, replicaId, leaseTtl, renewInterval, "", 0, Optional.empty());
    }

    /** A named fleet, the default user. */
    public CoordinationConfig(String url, Optional<Secret> password, boolean cluster, Optional<Path> caFile,
                              String replicaId, Duration leaseTtl, Duration renewInterval, String fleet,
                              int expectedReplicas) {
        this(url, password, cluster, caFile, replicaId, leaseTtl, renewInterval, fleet, expectedReplicas,
                Optional.empty());
    }

    public CoordinationConfig {
        Objects.requireNonNull(fleet, "fleet");
        if (!fleet.isEmpty() && !fleet.matches(FLEET_NAME)) {
            throw KeyCheck.rejected("coordination.fleet", fleet, FLEET_NAME_EXPECTED);
        }
        KeyCheck.atLeast("coordination.expected_replicas", expectedReplicas, 0);
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

    /** What a fleet's name may be: it goes into a Redis key's hash tag, a metric label and a log line. */
    public static final String FLEET_NAME = "[A-Za-z0-9][A-Za-z0-9._-]{0,62}";
    static final String FLEET_NAME_EXPECTED = "letters, digits, '.', '_' or '-', at most 63, starting with a letter or "
            + "digit";

    /**
     * The same fleet's leases for one model pool: each pool's budgets are leased apart, under the key
     * {@code {sluice:<fleet>.pool.<pool>}:fleet} ({@code {sluice:pool.<pool>}:fleet} for an unnamed fleet).
     */
    public CoordinationConfig forPool(String pool) {
        String f = (fleet.isEmpty() ? "" : fleet + ".") + "pool." + pool;
        if (!f.matches(FLEET_NAME)) {
            throw KeyCheck.rejected("coordination.fleet", fleet, "a name that with \".pool." + pool
                    + "\" stays within 63 characters (the pool's fleet key)");
        }
        return new CoordinationConfig(url, password, cluster, caFile, replicaId, leaseTtl, renewInterval, f,
                expectedReplicas, username);
    }

    /** The Redis key of this fleet's members (one hash tag: Redis Cluster keeps it on one node). */
    public String fleetKey() {
        return fleet.isEmpty() ? "{sluice}:fleet" : "{sluice:" + fleet + "}:fleet";
    }

    /**
     * The fleet's measured prefill rates (a hash: worker URL to its rate), under the fleet's own hash tag, so
     * fleets never share them and a Redis Cluster keeps them on the fleet key's node.
     */
    public String prefillRatesKey() {
        return fleet.isEmpty() ? "{sluice}:prefill_rates" : "{sluice:" + fleet + "}:prefill_rates";
    }

    /** True for {@code rediss://}. */
    public boolean tls() {
        return url.startsWith("rediss://");
    }
}
