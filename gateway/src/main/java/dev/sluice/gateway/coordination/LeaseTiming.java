package dev.sluice.gateway.coordination;

/**
 * When a renewal's outcome may still be acted on, and until when its grants hold, on this
 * replica's monotonic clock (docs/scale-out.md, "Fencing").
 *
 * <p>Redis frees a member's shares at {@code exp = TIME + lease_ttl}, TIME read while the script
 * runs, which is after this replica sent the renewal. Counting the lease from the send, less a
 * margin for the two clocks' rates, the holder stops using it before anyone else can be given it.
 * A grant that arrives after that instant is about a lease already gone, and is dropped; a failure
 * that arrives long after any timeout could have fired (a pause of this process) says nothing about
 * Redis now, and is dropped too: neither may put the replica on a share or on budget / N.
 */
final class LeaseTiming {
    private final long ttlNanos;
    private final long marginNanos;
    private final long staleFailureNanos;

    /**
     * @param renewNanos the renew interval: the margin is a twentieth of the lease, at most a quarter of it;
     *                   the store's own timeout is at most the lease, so a failure later than the lease plus
     *                   a renew interval comes from a process that was not running
     */
    LeaseTiming(long ttlNanos, long renewNanos) {
        this.ttlNanos = ttlNanos;
        this.marginNanos = Math.min(ttlNanos / 20, renewNanos / 4);
        this.staleFailureNanos = ttlNanos + renewNanos;
    }

    /** The instant (this clock) the grants of a renewal sent at {@code sentNanos} stop being used. */
    long validUntil(long sentNanos) {
        return sentNanos + ttlNanos - marginNanos;
    }

    /** An answer with grants, received at {@code nowNanos}: may they be put in force? */
    boolean grantUsable(long sentNanos, long nowNanos) {
        return nowNanos - validUntil(sentNanos) < 0;
    }

    /** A failure received at {@code nowNanos}: too late to say anything about Redis now? */
    boolean failureStale(long sentNanos, long nowNanos) {
        return nowNanos - sentNanos > staleFailureNanos;
    }
}
