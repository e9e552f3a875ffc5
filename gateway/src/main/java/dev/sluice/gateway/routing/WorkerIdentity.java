package dev.sluice.gateway.routing;

import java.util.List;

/**
 * What a worker says it is, read from its own description (SGLang's {@code /server_info}, or the
 * deprecated {@code /get_server_info}; vLLM's {@code /v1/models}), and where that disagrees with
 * the configuration: a prefill that reports itself a decode (a swapped prefill and decode URL is a
 * classic outage), a bootstrap port the prefill does not listen on, metrics not enabled. Shown in
 * {@code /admin/state} and {@code status}, logged when it changes.
 *
 * @param server   "sglang", "vllm" or "unknown" (nothing answered)
 * @param version  the server's version, or ""
 * @param mode     SGLang's {@code disaggregation_mode} ("prefill", "decode", "null"), or ""
 * @param dpSize   data-parallel ranks (SGLang's {@code dp_size}), 0 when unknown
 * @param problems what contradicts the configuration (every request would fail), one sentence each
 * @param warnings what will work but less well (no {@code --enable-metrics}: no telemetry)
 */
public record WorkerIdentity(String server, String version, String mode, int dpSize, List<String> problems,
                             List<String> warnings) {
    public static final WorkerIdentity UNKNOWN = new WorkerIdentity("unknown", "", "", 0, List.of(), List.of());

    public WorkerIdentity {
        problems = List.copyOf(problems);
        warnings = List.copyOf(warnings);
    }

    /** Whether the worker's own description contradicts its configured role (it would fail every request). */
    public boolean misconfigured() {
        return !problems.isEmpty();
    }
}
