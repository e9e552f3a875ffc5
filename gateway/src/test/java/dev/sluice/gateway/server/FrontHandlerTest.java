package dev.sluice.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.sluice.gateway.config.ConfigLoader;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The front handler in an embedded channel: routing answers that need no worker. */
class FrontHandlerTest {
    private final GatewayServer gateway = new GatewayServer(ConfigLoader.parse("""
            workers:
              prefill: [{url: "http://127.0.0.1:1"}]
              decode: [{url: "http://127.0.0.1:2"}]
            """, "test"));

    @AfterEach
    void close() {
        gateway.close();
    }

    private FullHttpResponse roundTrip(HttpMethod method, String uri, String body) {
        EmbeddedChannel ch = new EmbeddedChannel(new FrontHandler(gateway.frontServices()));
        ch.writeInbound(new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method, uri,
                Unpooled.copiedBuffer(body, StandardCharsets.UTF_8)));
        FullHttpResponse res = ch.readOutbound();
        FullHttpResponse copy = res.retainedDuplicate();
        res.release();
        assertFalse(ch.finishAndReleaseAll());
        return copy;
    }

    private static String text(FullHttpResponse res) {
        try {
            return res.content().toString(StandardCharsets.UTF_8);
        } finally {
            res.release();
        }
    }

    @Test
    void unknownPathIs404WithJson() {
        FullHttpResponse res = roundTrip(HttpMethod.GET, "/nope?x=1", "");
        assertThat(res.status().code()).isEqualTo(404);
        assertThat(text(res)).contains("\"code\":\"not_found\"");
    }

    @Test
    void wrongMethodIs405() {
        FullHttpResponse res = roundTrip(HttpMethod.PUT, "/generate", "{}");
        assertThat(res.status().code()).isEqualTo(405);
        assertThat(text(res)).contains("\"code\":\"method_not_allowed\"");
    }

    @Test
    void badJsonIs400BeforeAnyWorkerIsChosen() {
        FullHttpResponse res = roundTrip(HttpMethod.POST, "/v1/completions", "{\"prompt\":");
        assertThat(res.status().code()).isEqualTo(400);
        assertThat(text(res)).contains("\"code\":\"invalid_json\"");
    }

    @Test
    void noUsableWorkerIs503NoCapacityAndReadinessSaysSo() {
        FullHttpResponse res = roundTrip(HttpMethod.POST, "/generate", "{\"text\":\"hi\"}");
        assertThat(res.status().code()).isEqualTo(503);
        assertThat(text(res)).contains("\"code\":\"no_capacity\"");
        FullHttpResponse ready = roundTrip(HttpMethod.GET, "/readiness", "");
        assertThat(ready.status().code()).isEqualTo(503);
        assertThat(text(ready)).contains("not_ready");
    }
}
