package dev.sluice.gateway.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.DiscoveryConfig.Dns;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.handler.codec.dns.DatagramDnsQuery;
import io.netty.handler.codec.dns.DatagramDnsQueryDecoder;
import io.netty.handler.codec.dns.DatagramDnsResponse;
import io.netty.handler.codec.dns.DatagramDnsResponseEncoder;
import io.netty.handler.codec.dns.DefaultDnsRawRecord;
import io.netty.handler.codec.dns.DnsQuestion;
import io.netty.handler.codec.dns.DnsRecordType;
import io.netty.handler.codec.dns.DnsSection;
import io.netty.resolver.dns.SingletonDnsServerAddressStreamProvider;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The DNS source against a real DNS server on loopback (Netty's DNS codec over UDP, answering from a
 * table the test changes): A records with the configured port, SRV records with theirs, a new
 * answer picked up when the TTL runs out (not at the long interval), and an empty answer keeping the
 * last good set while the source keeps asking.
 */
class DnsEndpointSourceTest {
    /** name -> answers of one type: A as dotted addresses, SRV as "port target". */
    private final Map<String, List<String>> a = new ConcurrentHashMap<>();
    private final Map<String, List<String>> srv = new ConcurrentHashMap<>();
    private final AtomicInteger queries = new AtomicInteger();
    private volatile int ttl = 1;
    private EventLoopGroup group;
    private Channel server;
    private DnsEndpointSource source;

    @BeforeEach
    void startServer() throws Exception {
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        server = new Bootstrap().group(group).channel(NioDatagramChannel.class).handler(new ChannelInitializer<DatagramChannel>() {
            @Override
            protected void initChannel(DatagramChannel ch) {
                ch.pipeline().addLast(new DatagramDnsQueryDecoder(), new DatagramDnsResponseEncoder(),
                        new SimpleChannelInboundHandler<DatagramDnsQuery>() {
                            @Override
                            protected void channelRead0(ChannelHandlerContext ctx, DatagramDnsQuery q) throws Exception {
                                ctx.writeAndFlush(answer(q));
                            }
                        });
            }
        }).bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)).sync().channel();
    }

    private DatagramDnsResponse answer(DatagramDnsQuery q) throws Exception {
        queries.incrementAndGet();
        DnsQuestion question = q.recordAt(DnsSection.QUESTION);
        DatagramDnsResponse r = new DatagramDnsResponse(q.recipient(), q.sender(), q.id());
        r.setAuthoritativeAnswer(true);
        r.addRecord(DnsSection.QUESTION, question);
        String name = question.name().toLowerCase();
        if (question.type() == DnsRecordType.A) {
            for (String ip : a.getOrDefault(name, List.of())) {
                r.addRecord(DnsSection.ANSWER, new DefaultDnsRawRecord(question.name(), DnsRecordType.A, ttl,
                        Unpooled.wrappedBuffer(InetAddress.getByName(ip).getAddress())));
            }
        } else if (question.type() == DnsRecordType.SRV) {
            for (String s : srv.getOrDefault(name, List.of())) {
                String[] parts = s.split(" ");
                ByteBuf c = Unpooled.buffer();
                c.writeShort(0).writeShort(0).writeShort(Integer.parseInt(parts[0]));
                for (String label : parts[1].split("\\.")) {
                    byte[] b = label.getBytes(StandardCharsets.US_ASCII);
                    c.writeByte(b.length).writeBytes(b);
                }
                c.writeByte(0);
                r.addRecord(DnsSection.ANSWER, new DefaultDnsRawRecord(question.name(), DnsRecordType.SRV, ttl, c));
            }
        }
        return r;
    }

    @AfterEach
    void stop() {
        if (source != null) {
            source.close();
        }
        server.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
    }

    private void start(Dns config, AtomicReference<List<WorkerEndpoint>> seen) {
        source = new DnsEndpointSource("decode", config, Optional.empty(), group.next(), NioDatagramChannel.class,
                new SingletonDnsServerAddressStreamProvider((InetSocketAddress) server.localAddress()));
        source.start(seen::set);
    }

    private static List<String> urls(AtomicReference<List<WorkerEndpoint>> seen) {
        List<WorkerEndpoint> s = seen.get();
        return s == null ? List.of() : s.stream().map(WorkerEndpoint::url).sorted().toList();
    }

    private static boolean eventually(Duration d, BooleanSupplier c) throws InterruptedException {
        long end = System.nanoTime() + d.toNanos();
        while (System.nanoTime() < end) {
            if (c.getAsBoolean()) {
                return true;
            }
            Thread.sleep(20);
        }
        return c.getAsBoolean();
    }

    @Test
    void aRecordsAreFollowedAtTheirTtlAndAnEmptyAnswerKeepsTheLastGoodSet() throws Exception {
        a.put("decode.test.", List.of("127.0.0.1", "127.0.0.2"));
        AtomicReference<List<WorkerEndpoint>> seen = new AtomicReference<>();
        // a 1 s TTL against a 60 s interval: the source must ask again at the TTL
        start(new Dns("decode.test", Optional.of(30000), Optional.empty(), "http", Duration.ofSeconds(60),
                Duration.ofMillis(100)), seen);
        assertThat(eventually(Duration.ofSeconds(5), () -> urls(seen).equals(List.of("http://127.0.0.1:30000",
                "http://127.0.0.2:30000")))).as("%s", urls(seen)).isTrue();

        a.put("decode.test.", List.of("127.0.0.3"));
        assertThat(eventually(Duration.ofSeconds(5), () -> urls(seen).equals(List.of("http://127.0.0.3:30000"))))
                .as("re-resolved when the TTL ran out: %s", urls(seen)).isTrue();

        a.put("decode.test.", List.of()); // an empty answer: the last good set stays
        int asked = queries.get();
        assertThat(eventually(Duration.ofSeconds(5), () -> queries.get() >= asked + 4)).as("it keeps asking").isTrue();
        assertThat(urls(seen)).containsExactly("http://127.0.0.3:30000");

        a.put("decode.test.", List.of("127.0.0.4")); // and it recovers
        assertThat(eventually(Duration.ofSeconds(5), () -> urls(seen).equals(List.of("http://127.0.0.4:30000"))))
                .as("%s", urls(seen)).isTrue();
    }

    @Test
    void srvRecordsGiveEachWorkerItsPortAndAPrefillItsBootstrapPort() throws Exception {
        srv.put("_http._tcp.prefill.test.", List.of("30000 p1.test", "30010 p2.test"));
        a.put("p1.test.", List.of("127.0.0.5"));
        a.put("p2.test.", List.of("127.0.0.6"));
        AtomicReference<List<WorkerEndpoint>> seen = new AtomicReference<>();
        start(new Dns("_http._tcp.prefill.test", Optional.empty(), Optional.of(8998), "http", Duration.ofSeconds(60),
                Duration.ofMillis(100)), seen);
        assertThat(eventually(Duration.ofSeconds(5), () -> urls(seen).size() == 2)).as("%s", urls(seen)).isTrue();
        assertThat(urls(seen)).containsExactly("http://127.0.0.5:30000", "http://127.0.0.6:30010");
        assertThat(seen.get()).allSatisfy(e -> assertThat(e.bootstrapPort()).isEqualTo(8998));
    }
}
