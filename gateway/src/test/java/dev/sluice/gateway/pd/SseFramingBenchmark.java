package dev.sluice.gateway.pd;

import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.GenerationRoute;
import dev.sluice.gateway.bench.BenchBodies;
import dev.sluice.gateway.bench.EventLoopThreadsExecutor;
import dev.sluice.gateway.config.ConfigLoader;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.server.GatewayServer;
import dev.sluice.gateway.server.GatewayServerAccess;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerKeepAliveHandler;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The per-chunk cost of relaying a stream, on the real classes. One operation is one SSE event
 * (a ~280-byte {@code chat.completion.chunk} of one token, one HTTP chunk as SGLang writes it); an
 * invocation is one upstream read carrying {@value #EVENTS} of them, as a socket read of a fast
 * worker does.
 *
 * <ul>
 *   <li>{@code relayGateway}: the read goes through an upstream channel with the gateway's
 *       {@link HttpClientCodec} into a real {@link DecodeHalf} of a real {@link PdExchange}
 *       (unified attempt, streamed chat request, client response committed), whose
 *       {@link ClientSink} writes into a client channel with the gateway's pipeline
 *       ({@code FlushConsolidationHandler → HttpServerCodec → HttpServerKeepAliveHandler → front});
 *       then the consolidated flush runs and the encoded bytes are taken off the channel.</li>
 *   <li>{@code relayNettyFloor}: the same channels and codecs, but each decoded chunk object is
 *       passed straight to the client channel with a void promise: what Netty's HTTP codec costs
 *       per chunk at the least. The difference is the gateway's own per-chunk work.</li>
 *   <li>{@code sseFramerFeed}: {@link SseFramer#feed} and {@link SseFramer#encode} of the same
 *       events (the logprob-merging path, SGLang mode with logprobs only).</li>
 *   <li>{@code metricsPerChunk}: the two meters every chunk updates ({@code GatewayMetrics.interTokenGap},
 *       {@code clientBuffered}).</li>
 * </ul>
 * Sockets are not involved (EmbeddedChannel): the kernel's share is in {@code scripts/bench-relay}.
 * In this package because DecodeHalf, PdExchange's relay hooks and SseFramer are package-private.
 * Run: {@code scripts/bench-jmh}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Dio.netty.leakDetection.level=disabled", EventLoopThreadsExecutor.JVM_ARG_EXECUTOR,
    EventLoopThreadsExecutor.JVM_ARG_CLASS})
@State(Scope.Thread)
public class SseFramingBenchmark {
    static final int EVENTS = 16;
    private final FailureScan scan = new FailureScan();

    private GatewayServer gateway;
    private ByteBuf read;
    private ByteBuf events;
    private Relay gatewayRelay;
    private Relay floorRelay;
    private SseFramer framer;
    /** The events of one read as the decoder hands them over: slices of one pooled direct buffer. */
    private final ByteBuf[] chunks = new ByteBuf[EVENTS];
    private ByteBuf chunkBacking;

    @Setup
    public void setup() throws Exception {
        StringBuilder wire = new StringBuilder();
        StringBuilder plain = new StringBuilder();
        for (int i = 0; i < EVENTS; i++) {
            String e = BenchBodies.chunkEvent(i);
            int len = e.getBytes(StandardCharsets.UTF_8).length;
            wire.append(Integer.toHexString(len)).append("\r\n").append(e).append("\r\n");
            plain.append(e);
        }
        read = Unpooled.unreleasableBuffer(Unpooled.directBuffer().writeBytes(wire.toString().getBytes(StandardCharsets.UTF_8)));
        events = Unpooled.unreleasableBuffer(Unpooled.directBuffer().writeBytes(plain.toString().getBytes(StandardCharsets.UTF_8)));
        gateway = new GatewayServer(ConfigLoader.parse("""
                disaggregation: none
                workers:
                  unified: [{url: "http://127.0.0.1:1"}]
                """, "bench"));
        gatewayRelay = new Relay(true);
        floorRelay = new Relay(false);
        framer = new SseFramer();
        chunkBacking = ByteBufAllocator.DEFAULT.directBuffer().writeBytes(events, events.readerIndex(), events.readableBytes());
        int len = events.readableBytes() / EVENTS;
        for (int i = 0; i < EVENTS; i++) {
            chunks[i] = chunkBacking.slice(i * len, len);
        }
    }

    @TearDown
    public void tearDown() {
        gatewayRelay.client.finishAndReleaseAll();
        gatewayRelay.upstream.finishAndReleaseAll();
        floorRelay.client.finishAndReleaseAll();
        floorRelay.upstream.finishAndReleaseAll();
        gateway.metrics().close();
        chunkBacking.release();
    }

    @Benchmark
    @OperationsPerInvocation(EVENTS)
    public int relayGateway() {
        return gatewayRelay.relayOneRead(read);
    }

    @Benchmark
    @OperationsPerInvocation(EVENTS)
    public int relayNettyFloor() {
        return floorRelay.relayOneRead(read);
    }

    @Benchmark
    @OperationsPerInvocation(EVENTS)
    public int sseFramerFeed() {
        List<String> out = framer.feed(events);
        int n = 0;
        for (String payload : out) {
            n += SseFramer.encode(payload).length;
        }
        return n;
    }

    /**
     * {@link FailureScan} over the same chunks: the per-event cost {@link DecodeHalf} pays to find an
     * error event or an abort finish in a stream (one byte pass; a normal event is never decoded).
     */
    @Benchmark
    @OperationsPerInvocation(EVENTS)
    public int failureScan() {
        int found = 0;
        for (ByteBuf chunk : chunks) {
            if (scan.feed(chunk) != null) {
                found++;
            }
        }
        return found;
    }


    /** What PdExchange.chunkRelayed and ClientSink.write record per chunk: the inter-token gap timer and the buffered high water. */
    @Benchmark
    public long metricsPerChunk() {
        gateway.metrics().interTokenGap("chat_completions", 20_000_000L);
        gateway.metrics().clientBuffered(4096);
        return 1;
    }

    /** One client connection and one upstream connection of the gateway, as EmbeddedChannels. */
    private final class Relay {
        final EmbeddedChannel client = new EmbeddedChannel();
        final EmbeddedChannel upstream = new EmbeddedChannel();
        final ChannelHandlerContext front;
        final DecodeHalf half;

        Relay(boolean throughGateway) throws Exception {
            // GatewayServer's client pipeline, with a stand-in for FrontHandler that only holds the context
            client.pipeline()
                    .addLast("flush", new FlushConsolidationHandler(256, true))
                    .addLast("codec", new HttpServerCodec())
                    .addLast("keepalive", new HttpServerKeepAliveHandler())
                    .addLast("front", new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            ReferenceCountUtil.release(msg);
                        }
                    });
            front = client.pipeline().context("front");
            byte[] body = BenchBodies.smallChat();
            client.writeInbound(Unpooled.wrappedBuffer(("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n"
                    + "Content-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII), body));
            GenerationRequest request = GenerationRequest.parse(GenerationRoute.CHAT_COMPLETIONS,
                    Unpooled.wrappedBuffer(body));
            if (throughGateway) {
                PdServices pd = GatewayServerAccess.pdServices(gateway);
                Worker worker = pd.workers().decode().get(0);
                PdExchange ex = new PdExchange(pd, GatewayServerAccess.exchangeSettings(gateway), front, request, true,
                        System.nanoTime(), () -> { }, null);
                UnifiedAttempt at = new UnifiedAttempt(ex.scope(), new AttemptKey(ex.rid(), worker, worker));
                ex.adopt(at);
                half = new DecodeHalf(at); // driven directly: no call to a worker, the bytes come from the test
            } else {
                half = null;
                HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
                head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream")
                        .set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
                front.writeAndFlush(head);
            }
            // the upstream connection: the gateway's codec, then what UpstreamCall.onMessage does with each object
            upstream.pipeline().addLast("codec", new HttpClientCodec()).addLast("upstream", new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    if (half != null) {
                        if (msg instanceof HttpResponse head) {
                            half.onResponseHead(head);
                        }
                        if (msg instanceof HttpContent content) {
                            half.onContent(content);
                        }
                    } else if (msg instanceof HttpContent content) {
                        front.writeAndFlush(content, front.voidPromise());
                    }
                }
            });
            upstream.writeOutbound(new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST,
                    "/v1/chat/completions", Unpooled.wrappedBuffer(body)));
            drain(upstream);
            upstream.writeInbound(Unpooled.copiedBuffer("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    + "transfer-encoding: chunked\r\n\r\n", StandardCharsets.US_ASCII));
            relayOneRead(read); // commits the client response (first token) outside the measurement
        }

        int relayOneRead(ByteBuf wire) {
            ByteBuf in = upstream.alloc().directBuffer(wire.readableBytes()).writeBytes(wire, wire.readerIndex(),
                    wire.readableBytes());
            upstream.pipeline().fireChannelRead(in).fireChannelReadComplete();
            client.runPendingTasks(); // the consolidated flush
            return drain(client);
        }
    }

    private static int drain(EmbeddedChannel ch) {
        int n = 0;
        Object o;
        while ((o = ch.readOutbound()) != null) {
            if (o instanceof ByteBuf b) {
                n += b.readableBytes();
            }
            ReferenceCountUtil.release(o);
        }
        return n;
    }
}
