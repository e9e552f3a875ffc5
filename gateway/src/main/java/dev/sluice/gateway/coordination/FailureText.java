package dev.sluice.gateway.coordination;

/** A coordination failure told in one line, for the log and {@code /readiness}. */
final class FailureText {
    private FailureText() {
    }

    /**
     * The failure and, when it wraps one, its root cause (Lettuce's "Unable to connect" hides the TLS
     * handshake or the WRONGPASS that made it fail).
     */
    static String of(Throwable failure) {
        Throwable outer = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        Throwable root = outer;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = describe(outer);
        return root == outer ? text : text + "; cause: " + describe(root);
    }

    /**
     * The reason to show after {@code failure}, given the one shown before. Lettuce, when the server ends a
     * connection's handshake (WRONGPASS, NOAUTH) before its own connect listener runs, reports only
     * "RedisHandshakeHandler not registered" for that attempt (its ConnectionBuilder/AbstractRedisClient
     * find the handler already gone); that hides the server's answer the attempt before it, so an earlier
     * real reason is kept.
     */
    static String next(String previous, Throwable failure) {
        boolean race = false;
        for (Throwable t = failure; t != null && !race; t = t.getCause() == t ? null : t.getCause()) {
            race = t instanceof IllegalStateException && HANDSHAKE_RACE.equals(t.getMessage());
        }
        return race && previous != null && !previous.isEmpty() && !previous.contains(HANDSHAKE_RACE) ? previous
                : of(failure);
    }

    static final String HANDSHAKE_RACE = "RedisHandshakeHandler not registered";

    private static String describe(Throwable t) {
        String m = t.getMessage() == null ? "" : ": " + t.getMessage().replace('"', '\'').replace('\n', ' ');
        return t.getClass().getSimpleName() + m;
    }
}
