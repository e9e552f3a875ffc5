package dev.sluice.gateway.config;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.Optional;

/**
 * Reads the {@code coordination:} section (docs/scale-out.md):
 *
 * <pre>
 * coordination:
 *   redis:
 *     url: redis://host:6379              # or rediss:// (TLS); required when coordination is present
 *     password_env: SLUICE_REDIS_PASSWORD # optional
 *     username: sluice                    # optional: an ACL user (with password_env)
 *     cluster: false
 *     ca_file: /etc/sluice/redis-ca.pem   # rediss:// only; absent: the JDK's trust store
 *   fleet: ""                             # the fleet's name; empty: the key {sluice}:fleet
 *   expected_replicas: 0                  # N of budget / N before any member is known; 0: unset
 *   replica_id: ""                        # default: host name + "-" + pid
 *   lease_ttl: 5s
 *   renew_interval: 1s
 * </pre>
 *
 * Absent: empty, and the gateway admits its whole budget alone (an exploring read, for the schema and
 * the reference, still visits every key).
 */
final class CoordinationConfigReader {
    private CoordinationConfigReader() {
    }

    static Optional<CoordinationConfig> read(ConfigNode n) {
        n.allowOnly("redis", "fleet", "expected_replicas", "replica_id", "lease_ttl", "renew_interval");
        ConfigNode redis = n.child("redis", "The Redis or Valkey that holds the fleet's leases (standalone, or a "
                + "Redis Cluster: all keys share the hash tag {sluice}).");
        redis.allowOnly("url", "password_env", "username", "cluster", "ca_file");
        if (n.isMissing() && !n.reading().explore()) {
            return Optional.empty(); // nothing in force: the effective configuration has no coordination either
        }
        String url = url(redis.child("url", "redis://host:port, or rediss://host:port for TLS. Required when "
                + "coordination: is present."));
        Optional<Secret> password = password(redis.child("password_env", "Name of the environment variable holding "
                + "the Redis password (AUTH); never written in the file. Absent: no AUTH."));
        Optional<String> username = username(redis.child("username", "The Redis ACL user to authenticate as, with "
                + "the password from password_env (not a secret: never put it in the URL). Absent: the default user "
                + "(requirepass)."), !redis.child("password_env").isMissing() || n.reading().explore());
        boolean cluster = redis.child("cluster", "true: a Redis Cluster (Lettuce's cluster client); false: one server "
                + "(or a Valkey/Redis behind a proxy).").bool(false);
        ConfigNode caNode = redis.child("ca_file", "rediss:// only: PEM file of the CA certificates the Redis "
                + "server's certificate must chain to (absent: the JDK's trust store); its host name is always verified.");
        Optional<java.nio.file.Path> caFile = GatewayConfigReader.readableFile(caNode);
        if (caFile.isPresent() && url != null && !url.startsWith("rediss://")) {
            caNode.reject(caFile.get().toString(), "only with a rediss:// coordination.redis.url");
            caFile = Optional.empty();
        }
        ConfigNode fleetNode = n.child("fleet", "The fleet's name: replicas with the same name share one budget, two "
                + "fleets on one Redis each hold their own (the key {sluice:<fleet>}:fleet). Empty: the key {sluice}:fleet, "
                + "as before fleets had names (a rolling upgrade stays one fleet). Shown in metrics, /admin/state, status.");
        String fleet = fleetNode.text("");
        if (!fleet.isEmpty() && !fleet.matches(CoordinationConfig.FLEET_NAME)) {
            fleetNode.reject(fleet, CoordinationConfig.FLEET_NAME_EXPECTED);
            fleet = "";
        }
        int expected = n.child("expected_replicas", "How many replicas the fleet runs, for a replica that cannot reach "
                + "Redis at start: it serves on budget / this (never the whole budget) until it hears the fleet's "
                + "membership. 0: unset (the last membership seen, else 1). Set it to the Deployment's replicas.")
                .intIn(0, 0, 1024);
        String replicaId = n.child("replica_id", "This replica's name among its peers (in Redis, /admin/state, "
                + "status). Empty: host name + \"-\" + pid, chosen at start.").text("");
        Duration ttl = n.child("lease_ttl", "A replica that stops renewing (killed, partitioned) has its shares "
                + "freed after this; with Redis unreachable, a replica keeps its own shares this long, then runs on "
                + "budget / N.").durationAtLeast(Duration.ofSeconds(5), Duration.ofSeconds(1));
        ConfigNode renewNode = n.child("renew_interval", "How often this replica renews its leases and reports its "
                + "demand (one Redis round trip, one script). At most half of lease_ttl.");
        Duration renew = renewNode.durationAtLeast(Duration.ofSeconds(1), Duration.ofMillis(100));
        if (n.isMissing() || url == null) {
            return Optional.empty();
        }
        if (renew.multipliedBy(2).compareTo(ttl) > 0) {
            renewNode.reject(Durations.format(renew), "at most half of coordination.lease_ttl (" + Durations.format(ttl)
                    + ")");
            return Optional.empty();
        }
        return Optional.of(new CoordinationConfig(url, password, cluster, caFile, replicaId, ttl, renew, fleet, expected,
                username));
    }

    /**
     * Why a URL with a user part is refused: Lettuce reads {@code redis://secret@host} as the password, so
     * any user info may be a secret, and a secret in the file ends up in check-config's output, backups and
     * version control. The password and the ACL user have keys of their own.
     */
    static final String CREDENTIALS = "no credentials in the URL: redis[s]://host:port, the password from "
            + "coordination.redis.password_env, an ACL user in coordination.redis.username";

    private static String url(ConfigNode n) {
        String raw = n.scalar(ConfigKey.Type.STRING, "a URL such as redis://10.0.0.5:6379");
        if (raw == null) {
            return null;
        }
        URI uri;
        try {
            uri = new URI(raw);
        } catch (URISyntaxException e) {
            uri = null;
        }
        // before any message that echoes the URL: a user part is refused without being shown
        if (uri != null && uri.getRawUserInfo() != null && uri.getHost() != null) {
            n.reject(withoutUserInfo(uri), CREDENTIALS);
            return null;
        }
        if (raw.indexOf('@') >= 0) {
            // an '@' the URI parser does not take for the end of a user part (a password with '/', '#', '@'
            // in it) still marks one: nothing of it is shown
            n.reject("(a URL with credentials, not shown)", CREDENTIALS);
            return null;
        }
        if (uri == null) {
            n.reject(raw, "a redis:// or rediss:// URL");
            return null;
        }
        if (!("redis".equals(uri.getScheme()) || "rediss".equals(uri.getScheme())) || uri.getHost() == null) {
            n.reject(raw, "a redis:// or rediss:// URL with a host");
            return null;
        }
        n.inForce(raw);
        return raw;
    }

    /** The URL as written minus its user part, so that the refusal names which URL without the secret in it. */
    static String withoutUserInfo(URI uri) {
        String authority = uri.getRawAuthority();
        String host = authority.substring(authority.lastIndexOf('@') + 1);
        return uri.getScheme() + "://***@" + host + (uri.getRawPath() == null ? "" : uri.getRawPath())
                + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery());
    }

    private static Optional<String> username(ConfigNode n, boolean withPassword) {
        Optional<String> name = n.optionalText();
        if (name.isEmpty()) {
            return name;
        }
        if (name.get().isEmpty() || !name.get().matches("\\S+")) {
            n.reject(name.get(), "an ACL user name without spaces");
            return Optional.empty();
        }
        if (!withPassword) {
            // AUTH <user> needs a password; a user alone would fail every renewal instead of the start
            n.reject(name.get(), "with coordination.redis.password_env (the user's password)");
            return Optional.empty();
        }
        return name;
    }

    private static Optional<Secret> password(ConfigNode n) {
        String name = n.optionalScalar(ConfigKey.Type.ENV_NAME);
        if (name == null) {
            return Optional.empty();
        }
        if (!name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
            n.reject(name, "the name of an environment variable (letters, digits, _)");
            return Optional.empty();
        }
        n.inForce(name);
        String value = n.reading().env(name);
        if (value == null || value.isEmpty()) {
            if (!n.reading().explore()) {
                n.reject(name, "the name of a set, non-empty environment variable holding the Redis password ("
                        + name + " is " + (value == null ? "unset" : "empty") + ")");
            }
            return Optional.empty();
        }
        return Optional.of(new Secret(value));
    }
}
