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

    private static String describe(Throwable t) {
        String m = t.getMessage() == null ? "" : ": " + t.getMessage().replace('"', '\'').replace('\n', ' ');
        return t.getClass().getSimpleName() + m;
    }
}
