package dev.sluice.testbed.sim;

/**
 * Counters and gauges of one simulated server, counted per request item (a batch of n counts n).
 *
 * <p>"Work for a departed client" is measured at the GPU against the give-up time a load generator
 * writes into the body ({@code sim_client_gives_up_at_ms}: send time + client timeout, epoch ms):
 * an item counts when its <b>prefill work started</b> (first slice of prompt computation) after
 * that time, or when its <b>first decode step</b> happened after it; an item whose work started
 * while its HTTP connection was already closed counts too. Items that started in time and ran on
 * after the client left are not counted here; their GPU time after the give-up is in
 * {@code departedClientWorkSeconds}. Requests without the field never count. The give-up
 * time is a first-token deadline: decode steps after it count only for an item whose first token
 * came after it (a client that got its first token in time is still reading).
 *
 * @param completed                 items that ended normally
 * @param aborted                   items stopped by {@code /abort_request} or by their client disconnecting
 * @param failed                    items that ended with an error (KV transfer, bootstrap, injected fault)
 * @param kvTransferFailures        decode items that never got their KV, and prefill items whose KV could
 *                                  not be sent because their decode peer had gone
 * @param bootstrapFailures         prefill items whose KV no decode fetched within the bootstrap timeout
 * @param running                   prefill: prefilling or holding KV for the decode; decode: in the running batch
 * @param queued                    prefill: waiting in the FCFS queue; decode: waiting for KV or for a batch slot
 * @param promptTokensProcessed     prompt tokens the prefill computed (partial work of aborted items included)
 * @param workForDepartedClients    items whose prefill work or first decode step began after their client gave up
 * @param departedClientWorkSeconds GPU seconds spent on items after their client's give-up time: prefill
 *                                  slice time, and each decode step's time divided among the items it ran
 *                                  (for items whose first token came after the give-up time)
 * @param recomputedPrefills        vLLM decode: requests that came without {@code kv_transfer_params} and so
 *                                  were prefilled on the decode itself (a proxy that dropped them, vllm PR #42703)
 * @param strandedKv                vLLM prefill: answered prefill legs whose KV no decode fetched before
 *                                  {@code vllmAbortTimeout}, held all that time and then freed
 * @param heldKvRequests            vLLM prefill: answered prefill legs whose KV blocks are held for a decode
 *                                  now (not counted in running or queued: the engine has finished them)
 * @param heldKvBlocks              vLLM prefill: KV blocks those requests hold (16 tokens a block)
 * @param prefixCacheHitTokens      prompt tokens a prefill found in the server's prefix cache (not computed)
 * @param prefixCacheQueryTokens    prompt tokens of every prefill that looked in the prefix cache
 * @param prefillBusySeconds        seconds this server spent computing prompts (the prefill's GPU time,
 *                                  partial work of aborted requests included)
 * @param deprecatedCalls           calls of SGLang's deprecated routes ({@code /get_load},
 *                                  {@code /get_model_info}, {@code /get_server_info}), each logged with
 *                                  SGLang's deprecation warning
 */
public record WorkerStats(long completed, long aborted, long failed, long kvTransferFailures, long bootstrapFailures,
                          int running, int queued, long promptTokensProcessed, long workForDepartedClients,
                          double departedClientWorkSeconds, long recomputedPrefills, long strandedKv,
                          int heldKvRequests, long heldKvBlocks, long prefixCacheHitTokens,
                          long prefixCacheQueryTokens, double prefillBusySeconds, long deprecatedCalls) {

    /** The stats without the later components (they are 0). */
    public WorkerStats(long completed, long aborted, long failed, long kvTransferFailures, long bootstrapFailures,
                       int running, int queued, long promptTokensProcessed, long workForDepartedClients,
                       double departedClientWorkSeconds, long recomputedPrefills, long strandedKv,
                       int heldKvRequests, long heldKvBlocks, long prefixCacheHitTokens,
                       long prefixCacheQueryTokens, double prefillBusySeconds) {
        this(completed, aborted, failed, kvTransferFailures, bootstrapFailures, running, queued,
                promptTokensProcessed, workForDepartedClients, departedClientWorkSeconds, recomputedPrefills,
                strandedKv, heldKvRequests, heldKvBlocks, prefixCacheHitTokens, prefixCacheQueryTokens,
                prefillBusySeconds, 0);
    }
}
