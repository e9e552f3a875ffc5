package dev.sluice.gateway.coordination;

import dev.sluice.gateway.config.CoordinationConfig;
import dev.sluice.gateway.state.PrefillRateStore;
import dev.sluice.gateway.state.SavedRate;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.SslOptions;
import io.lettuce.core.StaticCredentialsProvider;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.api.async.RedisHashAsyncCommands;
import io.lettuce.core.api.async.RedisKeyAsyncCommands;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * The leases in Redis or Valkey through Lettuce (Netty underneath, on its own two I/O threads, Lettuce's minimum):
 * every call asynchronous and bounded by a timeout; while disconnected, commands fail at once
 * (never queued up to replay stale demand later); the connection is made lazily and again after a
 * failure, by the renewal that needs it (standalone: Lettuce's own reconnection is off, and a
 * connection that dropped is closed and replaced, never left to reconnect beside its replacement,
 * which leaked one connection per Redis outage; a cluster connection keeps Lettuce's reconnection of
 * its node connections, which follows slot moves). Standalone or Redis Cluster: the fleet's one key carries one hash
 * tag ({@code {sluice}}, or {@code {sluice:<fleet>}}), so the one script runs on one node either way.
 */
public final class RedisLeaseStore implements LeaseStore, PrefillRateStore {
    /** The key of the fleet without a name (every fleet's, before fleets had names). */
    static final String FLEET_KEY = "{sluice}:fleet";
    private final String fleetKey;
    private final String[] keys;
    private final String ratesKey;

    private final RedisURI uri;
    private final Duration timeout;
    private final ClientResources resources;
    private final RedisClient client;
    private final RedisClusterClient clusterClient;
    private final String script = LeaseScript.text();
    private final String sha = LeaseScript.sha1();
    private volatile StatefulConnection<String, String> connection;
    private CompletableFuture<? extends StatefulConnection<String, String>> connecting; // under this

    public RedisLeaseStore(CoordinationConfig config, Duration timeout) {
        this.timeout = timeout;
        this.fleetKey = config.fleetKey();
        this.keys = new String[] {fleetKey};
        this.ratesKey = config.prefillRatesKey();
        this.resources = DefaultClientResources.builder().ioThreadPoolSize(2).computationThreadPoolSize(2).build();
        this.uri = RedisURI.create(config.url());
        uri.setTimeout(timeout);
        // a cold JVM's first connection (class loading, TLS) may take longer than a renewal may: the
        // connection gets the lease time; renewals skip while it is being made
        config.password().ifPresent(p -> uri.setCredentialsProvider(
                new StaticCredentialsProvider(config.username().orElse(null), p.reveal().toCharArray())));
        SocketOptions socket = SocketOptions.builder().connectTimeout(config.leaseTtl()).build();
        TimeoutOptions timeouts = TimeoutOptions.enabled(timeout);
        SslOptions ssl = ssl(config);
        if (config.cluster()) {
            clusterClient = RedisClusterClient.create(resources, uri);
            // a slot moved or a failover: MOVED/ASK are followed, and (adaptive refresh) they and persistent
            // reconnects reload the topology, so the next renewals go to the new owner directly
            clusterClient.setOptions(ClusterClientOptions.builder().socketOptions(socket).timeoutOptions(timeouts)
                    .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder().enableAllAdaptiveRefreshTriggers()
                            .build())
                    .sslOptions(ssl).disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build());
            client = null;
        } else {
            client = RedisClient.create(resources, uri);
            client.setOptions(ClientOptions.builder().socketOptions(socket).timeoutOptions(timeouts)
                    .sslOptions(ssl).disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                    .autoReconnect(false).build());
            clusterClient = null;
        }
    }

    /**
     * TLS for {@code rediss://}: the JDK's provider, trusting {@code coordination.redis.ca_file} when set (else the
     * JDK's trust store); the URL's host name is verified against the certificate (Lettuce's default for rediss://,
     * {@code SslVerifyMode.FULL}). A wrong or missing CA fails the connection (a renewal), never the start: the
     * replica then runs as with Redis down.
     */
    private static SslOptions ssl(CoordinationConfig config) {
        SslOptions.Builder b = SslOptions.builder().jdkSslProvider();
        config.caFile().ifPresent(f -> b.trustManager(f.toFile())); // PEM certificates
        return b.build();
    }

    /** A renewal's bound: the renew interval, at least 1 s (a busy Redis or a GC pause), at most half the lease. */
    public static Duration commandTimeout(CoordinationConfig c) {
        Duration t = c.renewInterval().compareTo(Duration.ofSeconds(1)) < 0 ? Duration.ofSeconds(1) : c.renewInterval();
        Duration half = c.leaseTtl().dividedBy(2);
        return t.compareTo(half) > 0 ? half : t;
    }

    @Override
    public CompletionStage<String> renew(String replicaId, String address, long generation, long ttlMillis,
                                         String demandJson, String routedJson, boolean draining) {
        String[] args = {replicaId, address, Long.toString(generation), Long.toString(ttlMillis), demandJson,
                routedJson, draining ? "1" : "0"};
        return connection().thenCompose(c -> {
            RedisScriptingAsyncCommands<String, String> cmd = commands(c);
            CompletableFuture<String> run = cmd.<String>evalsha(sha, ScriptOutputType.VALUE, keys, args)
                    .toCompletableFuture()
                    .exceptionallyCompose(e -> unwrap(e) instanceof RedisNoScriptException
                            ? cmd.<String>eval(script, ScriptOutputType.VALUE, keys, args).toCompletableFuture()
                            : CompletableFuture.failedFuture(e));
            return run;
        }).orTimeout(timeout.toMillis() * 2, TimeUnit.MILLISECONDS);
    }

    @Override
    @SuppressWarnings("unchecked")
    public CompletionStage<Void> release(String replicaId, long generation) {
        return connection().thenCompose(c -> {
            String member = replicaId + "#" + generation;
            return c instanceof StatefulRedisClusterConnection<?, ?> cluster
                    ? ((StatefulRedisClusterConnection<String, String>) cluster).async().hdel(fleetKey, member)
                    .toCompletableFuture()
                    : ((StatefulRedisConnection<String, String>) c).async().hdel(fleetKey, member).toCompletableFuture();
        }).<Void>thenApply(n -> null).orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public CompletionStage<Map<String, String>> readPrefillRates() {
        // the command is bounded; the connection, when this makes it, has its own connect timeout (the lease time)
        return connection().thenCompose(c -> hashes(c).hgetall(ratesKey).toCompletableFuture()
                .orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS));
    }

    /** Sets the entries and keeps the hash for {@link SavedRate#MAX_AGE} past this write (a fleet gone for good leaves nothing). */
    @Override
    @SuppressWarnings("unchecked")
    public CompletionStage<Void> writePrefillRates(Map<String, String> byUrl) {
        if (byUrl.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        return connection().thenCompose(c -> hashes(c).hset(ratesKey, byUrl).toCompletableFuture()
                .thenCompose(n -> ((RedisKeyAsyncCommands<String, String>) hashes(c))
                        .pexpire(ratesKey, SavedRate.MAX_AGE.toMillis()).toCompletableFuture())
                .orTimeout(timeout.toMillis() * 2, TimeUnit.MILLISECONDS))
                .<Void>thenApply(x -> null);
    }

    @SuppressWarnings("unchecked")
    private static RedisHashAsyncCommands<String, String> hashes(StatefulConnection<String, String> c) {
        if (c instanceof StatefulRedisClusterConnection<?, ?> cluster) {
            return ((StatefulRedisClusterConnection<String, String>) cluster).async();
        }
        return ((StatefulRedisConnection<String, String>) c).async();
    }

    private static Throwable unwrap(Throwable e) {
        return e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
    }

    @SuppressWarnings("unchecked")
    private static RedisScriptingAsyncCommands<String, String> commands(StatefulConnection<String, String> c) {
        if (c instanceof StatefulRedisClusterConnection<?, ?> cluster) {
            return ((StatefulRedisClusterConnection<String, String>) cluster).async();
        }
        return ((StatefulRedisConnection<String, String>) c).async();
    }

    /** The connection, made now if there is none (asynchronously; a failed attempt is retried by the next renewal). */
    private synchronized CompletableFuture<StatefulConnection<String, String>> connection() {
        StatefulConnection<String, String> c = connection;
        if (c != null && c.isOpen()) {
            return CompletableFuture.completedFuture(c);
        }
        if (c != null) {
            connection = null;
            c.closeAsync(); // dropped (Redis restarted, the network cut): closed for good before it is replaced
        }
        CompletableFuture<? extends StatefulConnection<String, String>> f = connecting;
        if (f == null) {
            CompletableFuture<? extends StatefulConnection<String, String>> attempt = clusterClient != null
                    // Lettuce's cluster connectAsync needs the topology loaded first (else it fails at once,
                    // "Partitions not initialized"); loaded again at every attempt, so a cluster that moved on
                    // while this replica was cut off is seen as it is now
                    ? clusterClient.refreshPartitionsAsync().toCompletableFuture()
                    .thenCompose(v -> clusterClient.connectAsync(StringCodec.UTF8))
                    : client.connectAsync(StringCodec.UTF8, uri)
                    .toCompletableFuture();
            f = attempt;
            connecting = attempt;
            // an attempt already over (the cluster client's may be) clears `connecting` right here, so the
            // caller is given the attempt itself, never the field read again (it was null: a renewal's NPE)
            attempt.whenComplete((conn, e) -> connected(attempt, conn, e));
        }
        return f.thenApply(x -> (StatefulConnection<String, String>) x);
    }

    private synchronized void connected(CompletableFuture<?> attempt, StatefulConnection<String, String> c,
                                        Throwable e) {
        if (connecting == attempt) {
            connecting = null;
        }
        if (e == null) {
            connection = c;
        }
        // a failed attempt leaves nothing open: Lettuce closes the channel of a connect that failed (a TLS
        // handshake, a WRONGPASS, a timeout against a paused server)
    }

    @Override
    public void close() {
        // the client's shutdown closes every connection it made (closing ours first as well only added to the
        // "Connection is already closed" WARN lines Lettuce's cluster client logs for its node connections at
        // shutdown; a few remain, harmless)
        if (client != null) {
            client.shutdownAsync(0, 2, TimeUnit.SECONDS);
        } else {
            clusterClient.shutdownAsync(0, 2, TimeUnit.SECONDS);
        }
        resources.shutdown(0, 2, TimeUnit.SECONDS);
    }
}
