package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufOutputStream;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** Server-sent events over a chunked HTTP/1.1 response: {@code data: <json>\n\n} per event. */
final class SseWriter {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final byte[] DATA = "data: ".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] END = "\n\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);

    private SseWriter() {
    }

    /** 200 headers, sent before any event (as starlette's StreamingResponse does). */
    static ChannelFuture headers(Channel ch) {
        HttpResponse res = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8")
                .set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE)
                .set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
        return ch.writeAndFlush(res);
    }

    static ChannelFuture event(Channel ch, JsonNode json) {
        return ch.writeAndFlush(new DefaultHttpContent(encode(ch, json)));
    }

    /** {@code data: [DONE]} and the end of the response. */
    static ChannelFuture done(Channel ch) {
        ByteBuf buf = ch.alloc().buffer(DONE.length).writeBytes(DONE);
        return ch.writeAndFlush(new DefaultLastHttpContent(buf));
    }

    static ByteBuf encode(Channel ch, JsonNode json) {
        ByteBuf buf = ch.alloc().buffer(256);
        try {
            buf.writeBytes(DATA);
            JSON.writeValue((java.io.OutputStream) new ByteBufOutputStream(buf), json);
            buf.writeBytes(END);
            return buf;
        } catch (IOException | RuntimeException e) {
            buf.release();
            throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
        }
    }
}
