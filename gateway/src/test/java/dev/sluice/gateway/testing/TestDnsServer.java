package dev.sluice.gateway.testing;

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
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real DNS server on loopback (UDP, Netty's DNS codec) answering from tables a test changes:
 * A records by name (dotted addresses) and SRV records by name ({@code "port target"}), all with
 * {@link #ttl} seconds. Names are written fully qualified, lower case, with the final dot.
 */
public final class TestDnsServer implements AutoCloseable {
    public final Map<String, List<String>> a = new ConcurrentHashMap<>();
    public final Map<String, List<String>> srv = new ConcurrentHashMap<>();
    public final AtomicInteger queries = new AtomicInteger();
    public volatile int ttl = 1;
    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final Channel channel;

    public TestDnsServer() throws InterruptedException {
        channel = new Bootstrap().group(group).channel(NioDatagramChannel.class)
                .handler(new ChannelInitializer<DatagramChannel>() {
                    @Override
                    protected void initChannel(DatagramChannel ch) {
                        ch.pipeline().addLast(new DatagramDnsQueryDecoder(), new DatagramDnsResponseEncoder(),
                                new SimpleChannelInboundHandler<DatagramDnsQuery>() {
                                    @Override
                                    protected void channelRead0(ChannelHandlerContext ctx, DatagramDnsQuery q)
                                            throws UnknownHostException {
                                        ctx.writeAndFlush(answer(q));
                                    }
                                });
                    }
                }).bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)).sync().channel();
    }

    public InetSocketAddress address() {
        return (InetSocketAddress) channel.localAddress();
    }

    /** An event loop of the server's group, for a client under test (NIO datagram channels). */
    public io.netty.channel.EventLoop loop() {
        return group.next();
    }

    private DatagramDnsResponse answer(DatagramDnsQuery q) throws UnknownHostException {
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
                c.writeShort(0).writeShort(0).writeShort(Integer.parseInt(parts[0])); // priority, weight, port
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

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
