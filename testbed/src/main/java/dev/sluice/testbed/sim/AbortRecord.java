package dev.sluice.testbed.sim;

/**
 * One call of {@code POST /abort_request}.
 *
 * @param rid     the rid asked for ({@code "*"} for {@code abort_all})
 * @param matched whether a live request (or batch item) had that rid
 */
public record AbortRecord(String rid, long receivedNanos, boolean matched) {
}
