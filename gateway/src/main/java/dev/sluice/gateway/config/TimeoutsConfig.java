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
    private static final Duration MIN = Duration.ofMillis(1);

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return builder().connect(connect).firstToken(firstToken).idleStream(idleStream).request(request).abort(abort);
    }

    /** Five durations in a row: named, each at least 1ms, as the reader requires. */
    public static final class Builder {
        private Duration connect;
        private Duration firstToken;
        private Duration idleStream;
        private Duration request;
        private Duration abort;

        private Builder() {
        }

        public Builder connect(Duration v) {
            connect = KeyCheck.atLeast("timeouts.connect", v, MIN);
            return this;
        }

        public Builder firstToken(Duration v) {
            firstToken = KeyCheck.atLeast("timeouts.first_token", v, MIN);
            return this;
        }

        public Builder idleStream(Duration v) {
            idleStream = KeyCheck.atLeast("timeouts.idle_stream", v, MIN);
            return this;
        }

        public Builder request(Duration v) {
            request = KeyCheck.atLeast("timeouts.request", v, MIN);
            return this;
        }

        public Builder abort(Duration v) {
            abort = KeyCheck.atLeast("timeouts.abort", v, MIN);
            return this;
        }

        public TimeoutsConfig build() {
            return new TimeoutsConfig(KeyCheck.set("timeouts.connect", connect),
                    KeyCheck.set("timeouts.first_token", firstToken), KeyCheck.set("timeouts.idle_stream", idleStream),
                    KeyCheck.set("timeouts.request", request), KeyCheck.set("timeouts.abort", abort));
        }
    }
}
