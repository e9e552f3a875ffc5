package dev.sluice.testbed.sim;

import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A simulated SGLang PD cluster on loopback: N prefill servers (each with its bootstrap server)
 * and M decode servers sharing one small event loop group. Ports: prefill i on base+i, decode j
 * on base+N+j, bootstrap of prefill i on base+N+M+i; base 0 gives every server an ephemeral port.
 */
public final class SimCluster implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(SimCluster.class);

    private final SimConfig config;
    private final EventLoopGroup group;
    private final List<PrefillServer> prefills = new ArrayList<>();
    private final List<DecodeServer> decodes = new ArrayList<>();
    private volatile boolean closed;

    private SimCluster(SimConfig config, EventLoopGroup group) {
        this.config = config;
        this.group = group;
    }

    /** Binds every server; fails (having released everything) when a port is taken. */
    public static SimCluster start(int prefillCount, int decodeCount, int basePort, SimConfig config)
            throws InterruptedException {
        Objects.requireNonNull(config, "config");
        if (prefillCount < 0 || decodeCount < 0 || prefillCount + decodeCount == 0) {
            throw new IllegalArgumentException("servers: prefill=" + prefillCount + " decode=" + decodeCount
                    + " (expected: >= 0 each, at least one server)");
        }
        int last = basePort + 2 * prefillCount + decodeCount - 1;
        if (basePort < 0 || (basePort > 0 && last > 65535)) {
            throw new IllegalArgumentException("basePort: " + basePort + " (expected: 0, or 1.." + "65535 with room for "
                    + (2 * prefillCount + decodeCount) + " ports)");
        }
        SimCluster c = new SimCluster(config, Transport.newGroup(config.eventLoopThreads(), "sim"));
        try {
            for (int i = 0; i < prefillCount; i++) {
                PrefillServer p = new PrefillServer(config, i, c.nextLoop());
                c.prefills.add(p);
                p.bind(c.group, port(basePort, i));
                p.bindBootstrap(c.group, port(basePort, prefillCount + decodeCount + i));
            }
            for (int j = 0; j < decodeCount; j++) {
                DecodeServer d = new DecodeServer(config, j, c.nextLoop());
                c.decodes.add(d);
                d.bind(c.group, port(basePort, prefillCount + j));
            }
        } catch (InterruptedException | RuntimeException | Error e) {
            c.close();
            throw e;
        }
        log.info("sim cluster up prefill={} decode={} transport={}", prefillCount, decodeCount, Transport.name());
        return c;
    }

    private static int port(int base, int offset) {
        return base == 0 ? 0 : base + offset;
    }

    private EventLoop nextLoop() {
        return group.next();
    }

    public List<PrefillServer> prefills() {
        return List.copyOf(prefills);
    }

    public List<DecodeServer> decodes() {
        return List.copyOf(decodes);
    }

    /** Every server, prefills first. */
    public List<SimWorker> workers() {
        List<SimWorker> all = new ArrayList<>(prefills);
        all.addAll(decodes);
        return all;
    }

    public SimConfig config() {
        return config;
    }

    /** Stops every server and the event loops; returns within about two seconds. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<Channel> listeners = new ArrayList<>();
        for (PrefillServer p : prefills) {
            listeners.add(p.serverChannel());
            listeners.add(p.bootstrap().serverChannel());
        }
        for (DecodeServer d : decodes) {
            listeners.add(d.serverChannel());
        }
        for (Channel ch : listeners) {
            if (ch != null) {
                ch.close().awaitUninterruptibly(500, TimeUnit.MILLISECONDS);
            }
        }
        // the graceful shutdown closes every remaining connection (and with it every timer)
        group.shutdownGracefully(0, 500, TimeUnit.MILLISECONDS).awaitUninterruptibly(2, TimeUnit.SECONDS);
        log.info("sim cluster stopped");
    }
}
