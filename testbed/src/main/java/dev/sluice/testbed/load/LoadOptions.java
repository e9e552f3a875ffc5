package dev.sluice.testbed.load;

import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * The overload scenarios' settings of a load run, each orthogonal to the others and to
 * {@link LoadSpec}'s: whether clients stream, the prompt size distribution, client classes, and
 * which router the direct target plays.
 *
 * @param stream        {@code "stream": true} (SSE) or false (one JSON answer)
 * @param promptMin     with {@code promptMax}: prompt sizes log-uniform in [min, max] tokens; 0 = the fixed
 *                      {@code --prompt-tokens}
 * @param classes       client classes, shares summing to 1; empty: one class, {@code --client-timeout}
 * @param router        direct target only: the router played; null = {@link Router#SGLANG_ROUTER}
 * @param metricsUrl    gateway target only: the base URL whose {@code /metrics} the timeline reads (Sluice
 *                      serves it on its admin listener); null = the gateway's URL
 * @param replicaUrls   gateway target only: more gateway replicas; the clients are split round robin over
 *                      the gateway's URL and these (a chat session keeps to one replica)
 */
public record LoadOptions(boolean stream, int promptMin, int promptMax, List<ClientClass> classes, Router router,
                          java.net.URI metricsUrl, List<java.net.URI> replicaUrls) {

    /** The unprotected router the direct target plays. */
    public enum Router {
        /**
         * sgl-model-gateway (SGLang's Rust router): both halves sent at once; when the client gives up
         * only the decode connection closes, the prefill half is read to its end.
         */
        SGLANG_ROUTER,
        /**
         * SGLang's Python {@code mini_lb}: both halves sent at once (asyncio.gather) inside one aiohttp
         * session; a streamed client that leaves cancels the response generator, closing the session
         * and so both upstream connections; a non-streamed request runs to its end whatever the client does.
         */
        MINI_LB;

        public String wireName() {
            return this == SGLANG_ROUTER ? "sglang-router" : "mini-lb";
        }

        public static Router parse(String s) {
            return switch (s.trim().toLowerCase(Locale.ROOT)) {
                case "sglang-router" -> SGLANG_ROUTER;
                case "mini-lb" -> MINI_LB;
                default -> throw new IllegalArgumentException("--router: '" + s
                        + "' (expected: sglang-router or mini-lb)");
            };
        }
    }

    /** Streamed requests of one fixed size, one class, SGLang's router: what the load command did before. */
    public static final LoadOptions DEFAULTS = new LoadOptions(true, 0, 0, List.of(), null, null, List.of());

    public LoadOptions {
        classes = List.copyOf(Objects.requireNonNull(classes, "classes"));
        replicaUrls = List.copyOf(Objects.requireNonNull(replicaUrls, "replicaUrls"));
        if (promptMin != 0 || promptMax != 0) {
            if (promptMin < 1 || promptMax < promptMin) {
                throw new IllegalArgumentException("--prompt-tokens-range: " + promptMin + "-" + promptMax
                        + " (expected: MIN-MAX with 1 <= MIN <= MAX)");
            }
        }
        if (!classes.isEmpty()) {
            Set<String> names = new HashSet<>();
            double sum = 0;
            for (ClientClass c : classes) {
                if (!names.add(c.name())) {
                    throw new IllegalArgumentException("--class " + c.name() + ": given twice (expected: one "
                            + "--class per name)");
                }
                sum += c.share();
            }
            if (Math.abs(sum - 1) > 1e-6) {
                throw new IllegalArgumentException("--class shares sum to " + sum + " (expected: 1, e.g. "
                        + "interactive:0.3:15s and batch:0.7:60s)");
            }
        }
    }

    public boolean promptRange() {
        return promptMin > 0;
    }

    /** The router played in direct mode. */
    public Router routerOrDefault() {
        return router == null ? Router.SGLANG_ROUTER : router;
    }

    public LoadOptions withStream(boolean v) {
        return new LoadOptions(v, promptMin, promptMax, classes, router, metricsUrl, replicaUrls);
    }

    public LoadOptions withPromptRange(int min, int max) {
        return new LoadOptions(stream, min, max, classes, router, metricsUrl, replicaUrls);
    }

    public LoadOptions withClasses(List<ClientClass> v) {
        return new LoadOptions(stream, promptMin, promptMax, v, router, metricsUrl, replicaUrls);
    }

    public LoadOptions withMetricsUrl(java.net.URI v) {
        return new LoadOptions(stream, promptMin, promptMax, classes, router, v, replicaUrls);
    }

    public LoadOptions withRouter(Router v) {
        return new LoadOptions(stream, promptMin, promptMax, classes, v, metricsUrl, replicaUrls);
    }

    public LoadOptions withReplicaUrls(List<java.net.URI> v) {
        return new LoadOptions(stream, promptMin, promptMax, classes, router, metricsUrl, v);
    }
}
