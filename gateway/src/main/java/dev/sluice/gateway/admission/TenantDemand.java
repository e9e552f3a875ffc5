package dev.sluice.gateway.admission;

/**
 * One rate-limited tenant's recent use of this replica, tokens per minute, for its token-rate lease
 * (docs/scale-out.md).
 *
 * @param configured its {@code tokens_per_minute} (the whole fleet's)
 * @param inForce    the rate its bucket refills at here now: what this replica holds of the fleet's
 * @param consumed   what it used here lately (prompt tokens at dispatch, completion tokens at end)
 * @param refused    the prompt tokens of its requests refused here for its rate, per minute, lately
 */
public record TenantDemand(String tenant, long configured, long inForce, long consumed, long refused) {
}
