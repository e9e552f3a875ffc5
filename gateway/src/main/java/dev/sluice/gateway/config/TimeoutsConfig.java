package dev.sluice.gateway.config;

import java.time.Duration;

/**
 * Deadlines of one request's life.
 *
 * @param connect     TCP connect to a worker, and waiting for a pooled connection
 * @param firstToken  from dispatch to the first token (the first decode chunk, or the prefill
 *                    half finished for a non-streamed request)
 * @param idleStream  longest gap between two chunks of a started stream
 * @param request     longest total life of a request, streamed or not (catches a stuck decode
 *                    behind a non-streamed request, which sends nothing until it ends)
 * @param abort       how long a {@code POST /abort_request} to a worker may take
 */
public record TimeoutsConfig(Duration connect, Duration firstToken, Duration idleStream, Duration request,
                             Duration abort) {
}
