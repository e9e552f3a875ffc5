/**
 * What a gateway keeps across restarts: where its state directory is ({@link dev.sluice.gateway.state.StateDirectory}),
 * and the measured prefill rates, kept in a file there and, with coordination on, in Redis for every replica
 * ({@link dev.sluice.gateway.state.KeptPrefillRates}).
 */
package dev.sluice.gateway.state;
