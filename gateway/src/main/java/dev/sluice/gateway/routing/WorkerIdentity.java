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
 * @param engines  vLLM's engine cores behind the URL (its data-parallel ranks that this API server manages):
 *                 the distinct {@code engine} labels of {@code vllm:num_requests_running} on its {@code /metrics};
 *                 0 when not vLLM, or its metrics could not be read or carry no engine label
 * @param runningPerRank requests one data-parallel rank of the worker runs at once (SGLang's per-rank
 *                 {@code max_running_requests}), 0 when unknown; what the rank holds beyond it waits inside
 *                 the worker
 */
public record WorkerIdentity(String server, String version, String mode, int dpSize, List<String> problems,
                             List<String> warnings, int engines, int runningPerRank) {
    public static final WorkerIdentity UNKNOWN = new WorkerIdentity("unknown", "", "", 0, List.of(), List.of());

    public WorkerIdentity {
        problems = List.copyOf(problems);
        warnings = List.copyOf(warnings);
        if (engines < 0) {
            throw new IllegalArgumentException("engines: " + engines + " (expected: >= 0)");
        }
        if (runningPerRank < 0) {
            throw new IllegalArgumentException("runningPerRank: " + runningPerRank + " (expected: >= 0)");
        }
    }

    /** A worker whose running cap per rank is not known. */
    public WorkerIdentity(String server, String version, String mode, int dpSize, List<String> problems,
                          List<String> warnings, int engines) {
        this(server, version, mode, dpSize, problems, warnings, engines, 0);
    }

    /** A worker whose engines are not (or not yet) counted: every SGLang worker. */
    public WorkerIdentity(String server, String version, String mode, int dpSize, List<String> problems,
                          List<String> warnings) {
        this(server, version, mode, dpSize, problems, warnings, 0);
    }

    /** This identity with the engines its {@code /metrics} showed. */
    public WorkerIdentity withEngines(int count) {
        return new WorkerIdentity(server, version, mode, dpSize, problems, warnings, count, runningPerRank);
    }

    /** This identity with one more warning. */
    public WorkerIdentity withWarning(String warning) {
        List<String> more = new java.util.ArrayList<>(warnings);
        more.add(java.util.Objects.requireNonNull(warning, "warning"));
        return new WorkerIdentity(server, version, mode, dpSize, problems, more, engines, runningPerRank);
    }

    /** Whether the worker's own description contradicts its configured role (it would fail every request). */
    public boolean misconfigured() {
        return !problems.isEmpty();
    }
}
