package dev.sluice.testbed.sim;

/**
 * Which data-parallel rank a server gave one request (batch item), and why: what a test or a
 * benchmark reads to see where the gateway's requests really went.
 *
 * @param rid  the item's rid
 * @param room its bootstrap room, -1 without one
 * @param rank the rank that served it
 * @param how  how the rank was chosen
 */
public record RankAssignment(String rid, long room, int rank, How how) {
    /** How a server's data-parallel controller picked the rank. */
    public enum How {
        /**
         * The request named it: SGLang's {@code routed_dp_rank} (or the deprecated {@code data_parallel_rank}),
         * vLLM's {@code X-data-parallel-rank} header.
         */
        ROUTED,
        /** A PD prefill: {@code bootstrap_room % dp_size}. */
        BOOTSTRAP_ROOM,
        /** The server's own round robin (SGLang). */
        ROUND_ROBIN,
        /** vLLM's own balancer: the engine with the fewest requests, ties in turn. */
        LEAST_LOADED
    }
}
