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
 * A simulated serving cluster on loopback, sharing one small event loop group, in one of three
 * {@linkplain SimMode modes}. SGLANG: N prefill servers (each with its bootstrap server) and M
 * decode servers. VLLM: N vLLM prefill servers (each with its KV side channel) and M vLLM decode
 * servers. UNIFIED: M servers that prefill and decode themselves, no prefill servers. Ports: prefill
 * i on base+i, decode (or unified) j on base+N+j, bootstrap / side channel of prefill i on
 * base+N+M+i; base 0 gives every server an ephemeral port.
 */
public final class SimCluster implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(SimCluster.class);

    private final SimConfig config;
    private final SimMode mode;
    private final EventLoopGroup group;
    private final List<PrefillServer> prefills = new ArrayList<>();
    private final List<DecodeServer> decodes = new ArrayList<>();
    private final List<VllmPrefillServer> vllmPrefills = new ArrayList<>();
    private final List<VllmDecodeServer> vllmDecodes = new ArrayList<>();
    private final List<UnifiedServer> unified = new ArrayList<>();
    private final List<SimWorker> prefillSide = new ArrayList<>();
    private final List<SimWorker> decodeSide = new ArrayList<>();
    private volatile boolean closed;

    private SimCluster(SimConfig config, SimMode mode, EventLoopGroup group) {
        this.config = config;
        this.mode = mode;
        this.group = group;
    }

    /** An SGLang PD cluster: {@code start(prefillCount, decodeCount, basePort, config, SimMode.SGLANG)}. */
    public static SimCluster start(int prefillCount, int decodeCount, int basePort, SimConfig config)
            throws InterruptedException {
        return start(prefillCount, decodeCount, basePort, config, SimMode.SGLANG);
    }

    /**
     * Binds every server; fails (having released everything) when a port is taken.
     *
     * @param prefillCount prefill servers; must be 0 in {@link SimMode#UNIFIED}
     * @param decodeCount  decode servers, or in {@link SimMode#UNIFIED} the unified servers
     */
    public static SimCluster start(int prefillCount, int decodeCount, int basePort, SimConfig config, SimMode mode)
            throws InterruptedException {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(mode, "mode");
        if (prefillCount < 0 || decodeCount < 0 || prefillCount + decodeCount == 0) {
            throw new IllegalArgumentException("servers: prefill=" + prefillCount + " decode=" + decodeCount
                    + " (expected: >= 0 each, at least one server)");
        }
        if (mode == SimMode.UNIFIED && prefillCount != 0) {
            throw new IllegalArgumentException("prefill: " + prefillCount
                    + " (expected: 0 in UNIFIED mode, where the decode count is the number of unified servers)");
        }
        int last = basePort + 2 * prefillCount + decodeCount - 1;
        if (basePort < 0 || (basePort > 0 && last > 65535)) {
            throw new IllegalArgumentException("basePort: " + basePort + " (expected: 0, or 1.." + "65535 with room for "
                    + (2 * prefillCount + decodeCount) + " ports)");
        }
        SimCluster c = new SimCluster(config, mode, Transport.newGroup(config.eventLoopThreads(), "sim"));
        try {
            c.bindAll(prefillCount, decodeCount, basePort);
        } catch (InterruptedException | RuntimeException | Error e) {
            c.close();
            throw e;
        }
        log.info("sim cluster up mode={} prefill={} decode={} transport={}", mode, prefillCount, decodeCount,
                Transport.name());
        return c;
    }

    private void bindAll(int prefillCount, int decodeCount, int basePort) throws InterruptedException {
        for (int i = 0; i < prefillCount; i++) {
            int port = port(basePort, i);
            int kvPort = port(basePort, prefillCount + decodeCount + i);
            if (mode == SimMode.VLLM) {
                VllmPrefillServer p = new VllmPrefillServer(config, i, group.next());
                vllmPrefills.add(p);
                prefillSide.add(p);
                p.bind(group, port);
                p.bindSideChannel(group, kvPort);
            } else {
                PrefillServer p = new PrefillServer(config, i, group.next());
                prefills.add(p);
                prefillSide.add(p);
                p.bind(group, port);
                p.bindBootstrap(group, kvPort);
            }
        }
        for (int j = 0; j < decodeCount; j++) {
            EventLoop loop = group.next();
            SimWorker d = switch (mode) {
                case SGLANG -> add(decodes, new DecodeServer(config, j, loop));
                case VLLM -> add(vllmDecodes, new VllmDecodeServer(config, j, loop));
                case UNIFIED -> add(unified, new UnifiedServer(config, j, loop));
            };
            decodeSide.add(d);
            d.bind(group, port(basePort, prefillCount + j));
        }
        if (config.kvEventsEndpoint() != null) {
            // prefill-side servers publish (unified ones too); server i's ranks on the endpoint's port
            // + i x dp_size + rank: each server's DP ranks take dp_size ports after its own
            List<SimWorker> publishers = mode == SimMode.UNIFIED ? decodeSide : prefillSide;
            for (int i = 0; i < publishers.size(); i++) {
                publishers.get(i).publishKvEvents(
                        KvEventEndpoints.offset(config.kvEventsEndpoint(), i * config.dpSize()), "");
            }
        }
    }

    private static <T extends SimWorker> T add(List<T> list, T server) {
        list.add(server);
        return server;
    }

    private static int port(int base, int offset) {
        return base == 0 ? 0 : base + offset;
    }

    public SimMode mode() {
        return mode;
    }

    /** SGLang prefill servers (empty in the other modes). */
    public List<PrefillServer> prefills() {
        return List.copyOf(prefills);
    }

    /** SGLang decode servers (empty in the other modes). */
    public List<DecodeServer> decodes() {
        return List.copyOf(decodes);
    }

    /** vLLM prefill servers (empty in the other modes). */
    public List<VllmPrefillServer> vllmPrefills() {
        return List.copyOf(vllmPrefills);
    }

    /** vLLM decode servers (empty in the other modes). */
    public List<VllmDecodeServer> vllmDecodes() {
        return List.copyOf(vllmDecodes);
    }

    /** Unified servers (empty in the other modes). */
    public List<UnifiedServer> unified() {
        return List.copyOf(unified);
    }

    /** The prefill servers of any mode (none in UNIFIED). */
    public List<SimWorker> prefillWorkers() {
        return List.copyOf(prefillSide);
    }

    /** The decode servers of any mode, or the unified servers. */
    public List<SimWorker> decodeWorkers() {
        return List.copyOf(decodeSide);
    }

    /** Every server, prefills first. */
    public List<SimWorker> workers() {
        List<SimWorker> all = new ArrayList<>(prefillSide);
        all.addAll(decodeSide);
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
        for (SimWorker w : workers()) {
            for (Listener l : w.listeners()) {
                listeners.add(l.serverChannel());
            }
        }
        for (Channel ch : listeners) {
            if (ch != null) {
                ch.close().awaitUninterruptibly(500, TimeUnit.MILLISECONDS);
            }
        }
        for (SimWorker w : workers()) {
            w.closeKvEvents();
        }
        // the graceful shutdown closes every remaining connection (and with it every timer)
        group.shutdownGracefully(0, 500, TimeUnit.MILLISECONDS).awaitUninterruptibly(2, TimeUnit.SECONDS);
        log.info("sim cluster stopped");
    }
}
