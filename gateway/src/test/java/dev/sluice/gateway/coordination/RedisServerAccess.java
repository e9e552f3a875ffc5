package dev.sluice.gateway.coordination;

import java.nio.file.Path;

/** {@link RedisServer} for tests in other packages (end to end). */
public final class RedisServerAccess implements AutoCloseable {
    private final RedisServer server;

    private RedisServerAccess(RedisServer server) {
        this.server = server;
    }

    public static RedisServerAccess start(Path dir) throws Exception {
        return new RedisServerAccess(RedisServer.start(dir));
    }

    /** With more {@code redis-server} arguments (a TLS port, {@code requirepass}); the plain port stays on. */
    public static RedisServerAccess start(Path dir, java.util.List<String> extraArgs) throws Exception {
        return new RedisServerAccess(RedisServer.start(dir, extraArgs));
    }

    /** A loopback port nothing listens on, e.g. for {@code --tls-port}. */
    public static int freePort() throws java.io.IOException {
        return RedisServer.freePort();
    }

    public String url() {
        return server.url();
    }

    /** Runs {@code redis-cli ARGS} against this server and returns what it printed. */
    public String cli(String... args) throws Exception {
        return server.cli(args);
    }

    public void stop() throws InterruptedException {
        server.stop();
    }

    public void restart() throws Exception {
        server.restart();
    }

    @Override
    public void close() throws InterruptedException {
        server.close();
    }
}
