package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.metrics.GatewayMetrics;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What a client that asked for queue updates sees, byte for byte, through the real HTTP encoder:
 * the 200 at admission, comments while it waits, the wait at dispatch, a stream committed only by
 * its first token, and a refusal as an error event; and the wait header on every other response.
 */
class QueueUpdatesTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final EmbeddedChannel client = new EmbeddedChannel();
    private final ClientSink sink;
    private final StringBuilder wire = new StringBuilder(); // every byte written so far

    QueueUpdatesTest() {
        client.pipeline().addLast("encoder", new HttpResponseEncoder()).addLast("sink", new ChannelInboundHandlerAdapter());
        sink = new ChannelClientSink(client.pipeline().context("sink"), "rid-1", true, new GatewayMetrics());
    }

    @AfterEach
    void noLeaks() {
        assertFalse(client.finishAndReleaseAll());
    }

    /** Everything written and flushed so far, as text (the encoder's bytes). */
    private String written() {
        StringBuilder out = new StringBuilder();
        Object o;
        while ((o = client.readOutbound()) != null) {
            ByteBuf b = (ByteBuf) o;
            out.append(b.toString(StandardCharsets.UTF_8));
            b.release();
        }
        wire.append(out);
        return out.toString();
    }

    /** The response as a client decodes it (head, chunks and all). */
    private static FullHttpResponse decode(String wire) {
        EmbeddedChannel c = new EmbeddedChannel(new HttpResponseDecoder(), new HttpObjectAggregator(1 << 20));
        c.writeInbound(Unpooled.copiedBuffer(wire, StandardCharsets.UTF_8));
        FullHttpResponse r = c.readInbound();
        c.finishAndReleaseAll();
        return r;
    }

    @Test
    void anOptedInStreamGetsIts200AtOnceCommentsWhileItWaitsAndIsCommittedOnlyByItsFirstToken() {
        QueueUpdates q = new QueueUpdates(sink, true);
        q.submitted(0);
        q.admitted();
        String head = written();
        assertThat(head).startsWith("HTTP/1.1 200 OK\r\n").contains("content-type: text/event-stream")
                .contains("transfer-encoding: chunked").doesNotContain("X-Sluice-Queue-Wait-Ms");
        q.queued(7, 2_400);
        assertThat(written()).contains(": queue position=7 eta_ms=2400\n\n"); // flushed as it is written
        assertThat(sink.committed()).isFalse();
        q.granted(1_250_000_000L);
        assertThat(written()).contains(": queue position=0 eta_ms=0\n\n").contains(": queue wait_ms=1250\n\n");
        q.queued(3, 100); // computed before the grant, arriving after it: ignored
        assertThat(written()).isEmpty();

        sink.commitStream(HttpResponseStatus.OK, "text/event-stream");
        assertThat(sink.committed()).isTrue();
        sink.write(Unpooled.copiedBuffer("data: {\"x\":1}\n\n", StandardCharsets.UTF_8));
        sink.end();
        assertThat(written()).doesNotContain("HTTP/1.1").contains("data: {\"x\":1}");
        FullHttpResponse r = decode(wire.toString());
        try {
            assertThat(r.content().toString(StandardCharsets.UTF_8)).isEqualTo(": queue position=7 eta_ms=2400\n\n"
                    + ": queue position=0 eta_ms=0\n\n: queue wait_ms=1250\n\ndata: {\"x\":1}\n\n");
        } finally {
            r.release();
        }
    }

    @Test
    void aRefusalAfterThe200IsAnErrorEventWithItsCodeAndRetryAfterThenDone() throws Exception {
        QueueUpdates q = new QueueUpdates(sink, true);
        q.submitted(0);
        q.admitted();
        q.queued(2, 900);
        q.ended(3_000_000_000L);
        sink.sendError(ApiError.rejected(HttpResponseStatus.TOO_MANY_REQUESTS, "queue_timeout", "waited 3000 ms", 4));
        FullHttpResponse r = decode(written());
        try {
            assertThat(r.status().code()).isEqualTo(200);
            String body = r.content().toString(StandardCharsets.UTF_8);
            assertThat(body).startsWith(": queue position=2 eta_ms=900\n\nevent: error\ndata: {")
                    .endsWith("\n\ndata: [DONE]\n\n");
            String data = body.substring(body.indexOf("data: ") + 6, body.indexOf("\n\ndata: [DONE]"));
            JsonNode error = JSON.readTree(data).get("error");
            assertThat(error.get("code").asText()).isEqualTo("queue_timeout");
            assertThat(error.get("type").asText()).isNotBlank();
            assertThat(error.get("status").asInt()).isEqualTo(429);
            assertThat(error.get("retry_after").asLong()).isEqualTo(4);
        } finally {
            r.release();
        }
        assertThat(sink.ended()).isTrue();
    }

    @Test
    void everyOtherResponseSaysItsWaitInAHeader() {
        QueueUpdates q = new QueueUpdates(sink, false); // not asked for (or not streamed)
        q.submitted(0);
        q.admitted();
        q.queued(1, 10);
        assertThat(written()).isEmpty();
        q.granted(42_000_000L);
        sink.sendFull(HttpResponseStatus.OK, "application/json", Unpooled.copiedBuffer("{}", StandardCharsets.UTF_8));
        FullHttpResponse r = decode(written());
        assertThat(r.headers().get("X-Sluice-Queue-Wait-Ms")).isEqualTo("42");
        r.release();
    }

    @Test
    void aStreamNotOptedInSaysItsWaitInItsHeadAndARefusalIsAStatus() {
        EmbeddedChannel other = new EmbeddedChannel();
        other.pipeline().addLast(new HttpResponseEncoder()).addLast("sink", new ChannelInboundHandlerAdapter());
        ClientSink s = new ChannelClientSink(other.pipeline().context("sink"), "rid-2", true, new GatewayMetrics());
        QueueUpdates q = new QueueUpdates(s, false);
        q.submitted(0);
        q.ended(7_000_000L);
        s.sendError(ApiError.rejected(HttpResponseStatus.TOO_MANY_REQUESTS, "evicted", "pushed out", 2));
        ByteBuf b = other.readOutbound();
        String wire = b.toString(StandardCharsets.UTF_8);
        b.release();
        assertThat(wire).startsWith("HTTP/1.1 429").contains("X-Sluice-Queue-Wait-Ms: 7").contains("retry-after: 2");
        assertFalse(other.finishAndReleaseAll());
    }
}
