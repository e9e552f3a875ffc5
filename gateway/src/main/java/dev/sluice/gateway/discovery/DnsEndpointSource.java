package dev.sluice.gateway.discovery;

import dev.sluice.gateway.config.DiscoveryConfig.Dns;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.config.Secret;
import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.DatagramChannel;
import io.netty.handler.codec.dns.DefaultDnsQuestion;
import io.netty.handler.codec.dns.DefaultDnsRecordDecoder;
import io.netty.handler.codec.dns.DnsRawRecord;
import io.netty.handler.codec.dns.DnsRecord;
import io.netty.handler.codec.dns.DnsRecordType;
import io.netty.resolver.dns.DnsNameResolver;
import io.netty.resolver.dns.DnsNameResolverBuilder;
import io.netty.resolver.dns.DnsServerAddressStreamProvider;
import io.netty.resolver.dns.NoopDnsCache;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.PromiseCombiner;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A role's workers from DNS: the A and AAAA records of a name (every address on the configured port),
 * or its SRV records (each target's addresses on the record's port). Resolved again when the answer's
 * shortest TTL runs out, within [{@code min_interval}, {@code interval}]; the resolver caches nothing, so
 * the TTL is the name owner's. An empty or failed answer keeps the last good set, says so once, and is
 * asked again after {@code min_interval}. Runs on one event loop.
 */
public final class DnsEndpointSource implements EndpointSource {
    private static final Logger log = LoggerFactory.getLogger(DnsEndpointSource.class);

    private final String role;
    private final Dns config;
    private final Optional<Secret> authorization;
    private final EventLoop loop;
    private final DnsNameResolver resolver;
    private Consumer<List<WorkerEndpoint>> sink;
    private List<WorkerEndpoint> last;
    private boolean failing;
    private volatile boolean closed;
    private ScheduledFuture<?> next;

    public DnsEndpointSource(String role, Dns config, Optional<Secret> authorization, EventLoop loop,
                             Class<? extends DatagramChannel> channel, DnsServerAddressStreamProvider servers) {
        this.role = role;
        this.config = config;
        this.authorization = authorization;
        this.loop = loop;
        this.resolver = new DnsNameResolverBuilder(loop).datagramChannelType(channel)
                .nameServerProvider(servers).resolveCache(NoopDnsCache.INSTANCE)
                .queryTimeoutMillis(Math.max(500, Math.min(5_000, config.interval().toMillis()))).build();
    }

    @Override
    public WorkerSource kind() {
        return WorkerSource.DNS;
    }

    @Override
    public void start(Consumer<List<WorkerEndpoint>> sink) {
        this.sink = sink;
        loop.execute(this::resolve);
    }

    private void resolve() {
        if (closed) {
            return;
        }
        Future<Answer> answer = config.srv() ? srv() : addresses(config.name(), config.port().get());
        answer.addListener(f -> {
            if (closed) {
                return;
            }
            Answer a = f.isSuccess() ? (Answer) f.getNow() : null;
            Duration wait;
            if (a == null || a.endpoints().isEmpty()) {
                String why = a == null ? String.valueOf(f.cause()) : "no records";
                if (!failing) {
                    log.warn("dns discovery answer unusable, keeping the last good set role={} name={} reason=\"{}\" "
                            + "kept={}", role, config.name(), why, last == null ? 0 : last.size());
                }
                failing = true;
                wait = config.minInterval();
            } else {
                if (failing) {
                    log.info("dns discovery answers again role={} name={} workers={}", role, config.name(),
                            a.endpoints().size());
                }
                failing = false;
                if (!a.endpoints().equals(last)) {
                    last = a.endpoints();
                    sink.accept(last);
                }
                Duration ttl = Duration.ofSeconds(a.ttlSeconds());
                wait = ttl.compareTo(config.minInterval()) < 0 ? config.minInterval()
                        : ttl.compareTo(config.interval()) > 0 ? config.interval() : ttl;
            }
            next = loop.schedule(this::resolve, wait.toMillis(), TimeUnit.MILLISECONDS);
        });
    }

    /** The set and the shortest TTL in the answer. */
    private record Answer(List<WorkerEndpoint> endpoints, long ttlSeconds) {
    }

    private Future<Answer> addresses(String name, int port) {
        Promise<Answer> out = loop.newPromise();
        Future<List<DnsRecord>> a = resolver.resolveAll(new DefaultDnsQuestion(name, DnsRecordType.A));
        Future<List<DnsRecord>> aaaa = resolver.resolveAll(new DefaultDnsQuestion(name, DnsRecordType.AAAA));
        PromiseCombiner both = new PromiseCombiner(loop);
        both.addAll(a, aaaa);
        Promise<Void> done = loop.newPromise();
        both.finish(done);
        done.addListener(ignored -> {
            Set<WorkerEndpoint> eps = new LinkedHashSet<>();
            long ttl = Long.MAX_VALUE;
            boolean any = false;
            for (Future<List<DnsRecord>> f : List.of(a, aaaa)) {
                if (!f.isSuccess()) {
                    continue;
                }
                any = true;
                for (DnsRecord r : f.getNow()) {
                    try {
                        InetAddress addr = address(r);
                        if (addr != null) {
                            eps.add(endpoint(addr, port));
                            ttl = Math.min(ttl, r.timeToLive());
                        }
                    } finally {
                        ReferenceCountUtil.release(r);
                    }
                }
            }
            if (!any) {
                out.setFailure(a.cause());
            } else {
                out.setSuccess(new Answer(List.copyOf(eps), ttl == Long.MAX_VALUE ? 0 : ttl));
            }
        });
        return out;
    }

    private Future<Answer> srv() {
        Promise<Answer> out = loop.newPromise();
        resolver.resolveAll(new DefaultDnsQuestion(config.name(), DnsRecordType.SRV)).addListener(f -> {
            if (!f.isSuccess()) {
                out.setFailure(f.cause());
                return;
            }
            @SuppressWarnings("unchecked")
            List<DnsRecord> records = (List<DnsRecord>) f.getNow();
            List<String> targets = new ArrayList<>();
            List<Integer> ports = new ArrayList<>();
            long ttl = Long.MAX_VALUE;
            for (DnsRecord r : records) {
                try {
                    if (r instanceof DnsRawRecord raw && r.type() == DnsRecordType.SRV) {
                        // RFC 2782: priority, weight, port (16 bits each), then the target name
                        ByteBuf c = raw.content().duplicate();
                        c.skipBytes(4);
                        ports.add(c.readUnsignedShort());
                        targets.add(DefaultDnsRecordDecoder.decodeName(c));
                        ttl = Math.min(ttl, r.timeToLive());
                    }
                } finally {
                    ReferenceCountUtil.release(r);
                }
            }
            if (targets.isEmpty()) {
                out.setSuccess(new Answer(List.of(), 0));
                return;
            }
            List<Future<Answer>> each = new ArrayList<>();
            for (int i = 0; i < targets.size(); i++) {
                each.add(addresses(targets.get(i), ports.get(i)));
            }
            long srvTtl = ttl;
            PromiseCombiner all = new PromiseCombiner(loop);
            each.forEach(all::add);
            Promise<Void> done = loop.newPromise();
            all.finish(done);
            done.addListener(ignored -> {
                Set<WorkerEndpoint> eps = new LinkedHashSet<>();
                long min = srvTtl;
                for (Future<Answer> t : each) {
                    if (t.isSuccess()) {
                        eps.addAll(t.getNow().endpoints());
                        min = Math.min(min, t.getNow().ttlSeconds());
                    }
                }
                out.setSuccess(new Answer(List.copyOf(eps), min));
            });
        });
        return out;
    }

    private static InetAddress address(DnsRecord r) throws UnknownHostException {
        if (!(r instanceof DnsRawRecord raw)) {
            return null;
        }
        int len = raw.content().readableBytes();
        if ((r.type() == DnsRecordType.A && len == 4) || (r.type() == DnsRecordType.AAAA && len == 16)) {
            byte[] b = new byte[len];
            raw.content().getBytes(raw.content().readerIndex(), b);
            return InetAddress.getByAddress(b);
        }
        return null;
    }

    private WorkerEndpoint endpoint(InetAddress addr, int port) {
        String host = addr.getHostAddress();
        String h = host.contains(":") ? "[" + host + "]" : host;
        return WorkerEndpoint.of(config.scheme() + "://" + h + ":" + port, config.bootstrapPort().orElse(null),
                authorization);
    }

    @Override
    public void close() {
        closed = true;
        loop.execute(() -> {
            if (next != null) {
                next.cancel(false);
            }
            resolver.close();
        });
    }
}
