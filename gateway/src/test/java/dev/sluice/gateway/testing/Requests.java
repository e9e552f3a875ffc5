package dev.sluice.gateway.testing;

import dev.sluice.gateway.api.ApiException;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.GenerationRoute;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;

/** Parses a JSON body the way the front handler does, releasing the buffer. */
public final class Requests {
    private Requests() {
    }

    public static GenerationRequest parse(GenerationRoute route, String json) throws ApiException {
        ByteBuf buf = Unpooled.copiedBuffer(json, StandardCharsets.UTF_8);
        try {
            return GenerationRequest.parse(route, buf);
        } finally {
            buf.release();
        }
    }
}
