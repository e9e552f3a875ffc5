package dev.sluice.gateway.testing;

import com.google.protobuf.InvalidProtocolBufferException;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2StreamFrame;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.resource.v1.Resource;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real OTLP trace receiver for tests, on loopback port 0: it decodes what the gateway's exporter
 * sends with the official generated classes of the OTLP protobuf ({@code opentelemetry-proto}),
 * over HTTP ({@code POST /v1/traces}, application/x-protobuf) or gRPC ({@code
 * TraceService/Export} over HTTP/2 with prior knowledge, length-prefixed messages, status in the
 * trailers), and answers as a collector does. {@link #stop} takes it away (a collector gone).
 */
public final class OtlpReceiver implements AutoCloseable {
    public enum Transport { HTTP, GRPC }

    private static final String GRPC_PATH = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
    private final Transport transport;
    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final List<Received> spans = new CopyOnWriteArrayList<>();
    private final AtomicInteger exports = new AtomicInteger();
    private final List<String> problems = new CopyOnWriteArrayList<>();
    private Channel server;
    private final int port;

    /** One span as received, with its resource's service.name. */
    public record Received(String service, Span span) {
        public String traceId() {
            return HexFormat.of().formatHex(span.getTraceId().toByteArray());
        }

        public String spanId() {
            return HexFormat.of().formatHex(span.getSpanId().toByteArray());
        }

        public String parentId() {
            return HexFormat.of().formatHex(span.getParentSpanId().toByteArray());
        }

        public String name() {
            return span.getName();
        }

        /** A string, int, double or bool attribute as text, if present. */
        public Optional<String> attr(String key) {
            return attribute(span.getAttributesList(), key);
        }

        public boolean hasEvent(String name) {
            return span.getEventsList().stream().anyMatch(e -> e.getName().equals(name));
        }

        /** An attribute of the first event called {@code event}. */
        public Optional<String> eventAttr(String event, String key) {
            return span.getEventsList().stream().filter(e -> e.getName().equals(event)).findFirst()
                    .flatMap(e -> attribute(e.getAttributesList(), key));
        }

        @Override
        public String toString() {
            return name() + "[" + spanId() + " <- " + parentId() + " attrs=" + span.getAttributesList().stream()
                    .map(kv -> kv.getKey() + "=" + text(kv.getValue())).toList() + " events="
                    + span.getEventsList().stream().map(e -> e.getName()).toList() + " status=" + span.getStatus().getCode()
                    + "]";
        }
    }

    private OtlpReceiver(Transport transport) throws InterruptedException {
        this.transport = transport;
        ServerBootstrap b = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        if (transport == Transport.HTTP) {
                            ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(32 << 20), new HttpExport());
                        } else {
                            ch.pipeline().addLast(Http2FrameCodecBuilder.forServer().build(),
                                    new Http2MultiplexHandler(new ChannelInitializer<Channel>() {
                                        @Override
                                        protected void initChannel(Channel stream) {
                                            stream.pipeline().addLast(new GrpcExport());
                                        }
                                    }));
                        }
                    }
                });
        server = b.bind("127.0.0.1", 0).sync().channel();
        port = ((java.net.InetSocketAddress) server.localAddress()).getPort();
    }

    public static OtlpReceiver start(Transport transport) throws InterruptedException {
        return new OtlpReceiver(transport);
    }

    /** The endpoint for the gateway's {@code tracing.otlp.endpoint}. */
    public String endpoint() {
        return "http://127.0.0.1:" + port + (transport == Transport.HTTP ? "/v1/traces" : "");
    }

    public String protocol() {
        return transport == Transport.HTTP ? "http/protobuf" : "grpc";
    }

    /** Every span received so far. */
    public List<Received> spans() {
        return List.copyOf(spans);
    }

    /** The spans of one trace (trace id in hex). */
    public List<Received> trace(String traceId) {
        return spans.stream().filter(s -> s.traceId().equals(traceId)).toList();
    }

    /** Export requests received (each a batch). */
    public int exports() {
        return exports.get();
    }

    /** What could not be decoded (none expected). */
    public List<String> problems() {
        return List.copyOf(problems);
    }

    /** The collector goes away: its port closes, its connections are cut. */
    public void stop() throws InterruptedException {
        server.close().sync();
        group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).sync();
    }

    @Override
    public void close() throws InterruptedException {
        if (!group.isShuttingDown()) {
            stop();
        }
    }

    private void decoded(byte[] bytes) throws InvalidProtocolBufferException {
        ExportTraceServiceRequest req = ExportTraceServiceRequest.parseFrom(bytes);
        exports.incrementAndGet();
        for (ResourceSpans rs : req.getResourceSpansList()) {
            String service = service(rs.getResource());
            for (ScopeSpans ss : rs.getScopeSpansList()) {
                for (Span s : ss.getSpansList()) {
                    spans.add(new Received(service, s));
                }
            }
        }
    }

    private static String service(Resource r) {
        return attribute(r.getAttributesList(), "service.name").orElse("");
    }

    static Optional<String> attribute(List<KeyValue> kvs, String key) {
        return kvs.stream().filter(kv -> kv.getKey().equals(key)).findFirst().map(kv -> text(kv.getValue()));
    }

    private static String text(AnyValue v) {
        return switch (v.getValueCase()) {
            case STRING_VALUE -> v.getStringValue();
            case INT_VALUE -> String.valueOf(v.getIntValue());
            case DOUBLE_VALUE -> String.valueOf(v.getDoubleValue());
            case BOOL_VALUE -> String.valueOf(v.getBoolValue());
            case ARRAY_VALUE -> v.getArrayValue().getValuesList().stream().map(OtlpReceiver::text).toList().toString();
            default -> v.toString();
        };
    }

    /** OTLP/HTTP: POST /v1/traces, a binary protobuf body, a protobuf answer. */
    private final class HttpExport extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            HttpResponseStatus status = HttpResponseStatus.OK;
            if (!req.uri().equals("/v1/traces")) {
                status = HttpResponseStatus.NOT_FOUND;
            } else {
                try {
                    decoded(ByteBufUtil.getBytes(req.content()));
                } catch (InvalidProtocolBufferException e) {
                    problems.add("http: " + e);
                    status = HttpResponseStatus.BAD_REQUEST;
                }
            }
            byte[] answer = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
            FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, Unpooled.wrappedBuffer(answer));
            res.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/x-protobuf")
                    .setInt(HttpHeaderNames.CONTENT_LENGTH, answer.length);
            ctx.writeAndFlush(res);
        }
    }

    /** OTLP/gRPC: one unary call per HTTP/2 stream, a 5-byte prefix (compressed flag, length) before each message. */
    private final class GrpcExport extends SimpleChannelInboundHandler<Http2StreamFrame> {
        private final List<byte[]> chunks = new ArrayList<>();
        private String path;

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, Http2StreamFrame frame) {
            boolean end = false;
            if (frame instanceof Http2HeadersFrame h) {
                path = String.valueOf(h.headers().path());
                end = h.isEndStream();
            } else if (frame instanceof Http2DataFrame d) {
                chunks.add(ByteBufUtil.getBytes(d.content()));
                end = d.isEndStream();
            }
            if (!end) {
                return;
            }
            int status = 0;
            String message = null;
            ByteBuf all = Unpooled.wrappedBuffer(chunks.toArray(new byte[0][]));
            try {
                if (!GRPC_PATH.equals(path)) {
                    status = 12; // UNIMPLEMENTED
                    message = "unknown method " + path;
                } else if (all.readableBytes() < 5 || all.getByte(0) != 0) {
                    status = 3;
                    message = "expected one uncompressed message";
                } else {
                    int length = all.getInt(1);
                    decoded(ByteBufUtil.getBytes(all, 5, length));
                }
            } catch (InvalidProtocolBufferException e) {
                problems.add("grpc: " + e);
                status = 3; // INVALID_ARGUMENT
                message = e.getMessage();
            } finally {
                all.release();
            }
            ctx.write(new DefaultHttp2HeadersFrame(new DefaultHttp2Headers().status("200")
                    .set("content-type", "application/grpc")));
            if (status == 0) {
                byte[] answer = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
                ByteBuf framed = ctx.alloc().buffer(5 + answer.length).writeByte(0).writeInt(answer.length)
                        .writeBytes(answer);
                ctx.write(new DefaultHttp2DataFrame(framed));
            }
            DefaultHttp2Headers trailers = new DefaultHttp2Headers();
            trailers.set("grpc-status", String.valueOf(status));
            if (message != null) {
                trailers.set("grpc-message", message);
            }
            ctx.writeAndFlush(new DefaultHttp2HeadersFrame(trailers, true));
        }
    }
}
