package dev.sluice.gateway.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisConnectionException;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

/**
 * The one-line reason of a coordination failure, and Lettuce's connect race: when Redis ends a handshake
 * (WRONGPASS) before Lettuce's connect listener runs, that attempt fails with only "RedisHandshakeHandler not
 * registered"; the server's answer seen before must stay the reason shown (a real {@code redis-server} with a
 * wrong password produced both in turn, and {@code /readiness} flipped between them).
 */
class FailureTextTest {
    private static Throwable connect(Throwable cause) {
        return new CompletionException(new RedisConnectionException("Unable to connect to 127.0.0.1:6379", cause));
    }

    private static final Throwable WRONGPASS = connect(new RedisCommandExecutionException(
            "WRONGPASS invalid username-password pair or user is disabled."));
    private static final Throwable RACE = connect(new IllegalStateException(FailureText.HANDSHAKE_RACE));

    @Test
    void theRootCauseIsNamedAfterTheWrapper() {
        assertThat(FailureText.of(WRONGPASS)).isEqualTo("RedisConnectionException: Unable to connect to "
                + "127.0.0.1:6379; cause: RedisCommandExecutionException: WRONGPASS invalid username-password pair "
                + "or user is disabled.");
    }

    @Test
    void lettucesHandshakeRaceKeepsTheServersEarlierAnswer() {
        String first = FailureText.next("", WRONGPASS);
        assertThat(FailureText.next(first, RACE)).isEqualTo(first).contains("WRONGPASS");
        // with nothing better known, the race is what is said
        assertThat(FailureText.next("", RACE)).contains(FailureText.HANDSHAKE_RACE);
        assertThat(FailureText.next(FailureText.next("", RACE), RACE)).contains(FailureText.HANDSHAKE_RACE);
        // any other failure replaces the earlier reason
        Throwable refused = connect(new java.net.ConnectException("Connection refused"));
        assertThat(FailureText.next(first, refused)).contains("Connection refused").doesNotContain("WRONGPASS");
    }
}
