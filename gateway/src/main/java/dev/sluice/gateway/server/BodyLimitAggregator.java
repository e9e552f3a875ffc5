package dev.sluice.gateway.server;

import dev.sluice.gateway.api.ApiError;
import dev.sluice.gateway.metrics.GatewayMetrics;
import dev.sluice.gateway.api.Outcome;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import java.time.Duration;

/**
 * Aggregates request bodies up to {@code http.max_request_body}; a larger body gets a 413 with
 * an OpenAI-style JSON body (Netty's default 413 has none), and the connection is closed since
 * the rest of the body would still be on the wire.
 */
final class BodyLimitAggregator extends HttpObjectAggregator {
    private final long limit;
    private final GatewayMetrics metrics;

    BodyLimitAggregator(int limit, GatewayMetrics metrics) {
        super(limit, true);
        this.limit = limit;
        this.metrics = metrics;
    }

    @Override
    protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
        String path = oversized instanceof HttpRequest r ? r.uri() : "?";
        metrics.requestEnded(Routes.metricLabel(path), Outcome.BAD_REQUEST, Duration.ZERO);
        RequestGuard guard = ctx.pipeline().get(RequestGuard.class);
        if (guard != null) {
            guard.refuse(ApiError.bodyTooLarge(limit), "body_too_large"); // answered below keep-alive, lingering
        } else {
            Responses.error(ctx, ApiError.bodyTooLarge(limit), false);
        }
    }
}
