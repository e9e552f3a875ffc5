package dev.sluice.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.sluice.gateway.config.ClientLimits;
import dev.sluice.gateway.metrics.GatewayMetrics;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;

/**
 * The client connection's decoding handlers, the gateway's own classes in the gateway's order
 * (strict codec, request guard), fed arbitrary bytes: no exception escapes the pipeline, whatever
 * passes the guard is a well-formed request head with successfully decoded content, whatever the
 * gateway writes back is an HTTP/1.1 response, and every buffer is released.
 */
class HttpDecodingFuzzTest {
    private static final GatewayMetrics METRICS = new GatewayMetrics();
    private static final HttpDecoderConfig DECODER = new HttpDecoderConfig().setMaxInitialLineLength(1024)
            .setMaxHeaderSize(2048).setValidateHeaders(true).setStrictLineParsing(true)
            .setAllowDuplicateContentLengths(false).setUseRfc9112TransferEncoding(true);

    @FuzzTest(maxDuration = "10s")
    void anyBytesDecodeIntoRequestsOrOneRefusal(byte[] input) {
        ClientConnections connections = new ClientConnections(ClientLimits.DEFAULTS, METRICS);
        RequestGuard guard = new RequestGuard(connections, METRICS);
        EmbeddedChannel ch = new EmbeddedChannel(new FirstByteWatch(guard), new StrictServerCodec(DECODER), guard);
        try {
            // in two writes, as a socket may deliver it
            int cut = input.length / 2;
            ch.writeInbound(Unpooled.copiedBuffer(input, 0, cut));
            if (ch.isOpen()) { // a refusal closes the connection: the rest is never read
                ch.writeInbound(Unpooled.copiedBuffer(input, cut, input.length - cut));
            }
            Object msg;
            while ((msg = ch.readInbound()) != null) {
                try {
                    if (msg instanceof HttpRequest head) {
                        assertThat(head.decoderResult().isSuccess()).as("a failed head passed the guard").isTrue();
                        assertThat(head.method()).isNotNull();
                    }
                    if (msg instanceof HttpContent c) {
                        assertThat(c.decoderResult().isSuccess()).isTrue();
                    }
                } finally {
                    ReferenceCountUtil.release(msg);
                }
            }
            StringBuilder written = new StringBuilder(); // the encoder writes a head, then the body, separately
            ByteBuf out;
            while ((out = ch.readOutbound()) != null) {
                try {
                    written.append(out.toString(StandardCharsets.ISO_8859_1));
                } finally {
                    out.release();
                }
            }
            if (written.length() > 0) {
                assertThat(written.toString()).startsWith("HTTP/1.1 ").contains("\r\n\r\n");
            }
            ch.checkException();
        } finally {
            ch.finishAndReleaseAll();
            connections.close();
        }
    }
}
