package dev.sluice.testbed.sim;

/** Which servers a {@link SimCluster} runs: the protocol a gateway in front of it must speak. */
public enum SimMode {
    /** SGLang PD: prefill servers with bootstrap ports, decode servers; concurrent dispatch with a room. */
    SGLANG,
    /** vLLM PD (NixlConnector): prefill servers with KV side channels, decode servers; sequential handoff. */
    VLLM,
    /** No disaggregation: servers that prefill and decode themselves (SGLang API). */
    UNIFIED
}
