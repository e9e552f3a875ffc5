package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig;

/**
 * The limits admission decides with: the configured ones (reloads included; with coordination the
 * whole fleet's), or this replica's share of them, which may be leased until an instant and then is
 * nothing until the next share comes. Under the admission lock (the two configurations are also
 * published for reads outside it).
 */
final class LimitsInForce {
    private final WorkerWindows windows;
    private final TenantRates rates;
    private volatile AdmissionConfig config; // the limits decided with: fleet's, or this replica's share of them
    private volatile AdmissionConfig fleet; // as configured (reloads included); the whole fleet's with coordination
    private FleetShares shares; // this replica's share (coordination), or null: the configured limits whole
    private boolean sharesExpire; // the share holds until sharesValidUntil (a lease), then nothing
    private long sharesValidUntil;

    LimitsInForce(AdmissionConfig configured, WorkerWindows windows, TenantRates rates) {
        this.config = configured;
        this.fleet = configured;
        this.windows = windows;
        this.rates = rates;
    }

    AdmissionConfig config() {
        return config;
    }

    AdmissionConfig fleet() {
        return fleet;
    }

    /** A share (null: the configured limits whole), leased until {@code validUntilNanos} when {@code expires}. */
    void share(FleetShares next, boolean expires, long validUntilNanos) {
        sharesExpire = expires && next != null;
        sharesValidUntil = validUntilNanos;
        shares = next;
        config = next == null ? fleet : next.applyTo(fleet);
        windows.shares(next);
        rates.shares(next);
    }

    /** A reloaded configuration, under the share in force. */
    void configured(AdmissionConfig next) {
        fleet = next;
        config = shares == null ? next : shares.applyTo(next);
    }

    /** A leased share past its time is no share at all; true when it just lapsed. */
    boolean fenceLapsed(long now) {
        if (sharesExpire && now - sharesValidUntil >= 0) {
            sharesExpire = false;
            shares = FleetShares.none();
            config = shares.applyTo(fleet);
            windows.shares(shares);
            rates.shares(shares);
            return true;
        }
        return false;
    }
}
