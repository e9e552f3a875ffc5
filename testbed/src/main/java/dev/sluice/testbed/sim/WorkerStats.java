package dev.sluice.testbed.sim;

/**
 * Counters and gauges of one simulated server, counted per request item (a batch of n counts n).
 *
 * @param completed               items that ended normally
 * @param aborted                 items stopped by {@code /abort_request} or by their client disconnecting
 * @param failed                  items that ended with an error (KV transfer, bootstrap, injected fault)
 * @param kvTransferFailures      decode items that never got their KV
 * @param bootstrapFailures       prefill items whose KV no decode fetched within the bootstrap timeout
 * @param running                 prefill: prefilling or holding KV for the decode; decode: in the running batch
 * @param queued                  prefill: waiting in the FCFS queue; decode: waiting for KV or for a batch slot
 * @param promptTokensProcessed   prompt tokens the prefill computed (partial work of aborted items included)
 * @param workForDepartedClients  prefill items whose token work started or went on after their client left
 */
public record WorkerStats(long completed, long aborted, long failed, long kvTransferFailures, long bootstrapFailures,
                          int running, int queued, long promptTokensProcessed, long workForDepartedClients) {
}
