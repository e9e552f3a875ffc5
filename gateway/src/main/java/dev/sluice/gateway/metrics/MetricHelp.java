package dev.sluice.gateway.metrics;

/** The HELP text of every counter of {@link GatewayMetrics} (promtool lints a counter without one). */
final class MetricHelp {
    private MetricHelp() {
    }

    static final java.util.Map<String, String> COUNTERS = java.util.Map.ofEntries(
            java.util.Map.entry("sluice.requests", "requests ended, by route and outcome"),
            java.util.Map.entry("sluice.aborts", "requests whose halves the gateway stopped, by cause"),
            java.util.Map.entry("sluice.internal.errors", "the gateway's own failures (bugs) while handling requests, by "
                    + "where; answered 500, never counted against a worker"),
            java.util.Map.entry("sluice.vllm.handoffs", "vLLM prefill KV handoffs by result: transferred, recomputed (the "
                    + "prefill answered no kv_transfer_params), released (request ended between the legs)"),
            java.util.Map.entry("sluice.abort.requests.sent", "POST /abort_request calls to workers, by role and result"),
            java.util.Map.entry("sluice.upstream.errors", "failures of a worker call, by role and kind"),
            java.util.Map.entry("sluice.kv.transfer.failures", "KV transfer failures the workers reported to the gateway, by worker"),
            java.util.Map.entry("sluice.rejections", "requests admission control rejected, by reason"),
            java.util.Map.entry("sluice.prompt.tokens", "prompt tokens the workers reported for completed requests"),
            java.util.Map.entry("sluice.completion.tokens", "completion tokens the workers reported"),
            java.util.Map.entry("sluice.retries", "requests sent again to another prefill/decode pair, by reason"),
            java.util.Map.entry("sluice.worker.ejections", "times a worker was taken out of rotation, by role, worker and reason"),
            java.util.Map.entry("sluice.stall.probes", "the gateway's own probes of a worker suspect of a silent stall "
                    + "(health.stall_panic), by role, worker and result (success, failed, timeout)"),
            java.util.Map.entry("sluice.http.rejections", "client requests or connections the HTTP layer refused before routing, by reason"),
            java.util.Map.entry("sluice.tls.reloads", "checks of listen.tls files that found a change, by result (reloaded, failed)"),
            java.util.Map.entry("sluice.tls.handshake.failures", "client TLS handshakes that failed (plain HTTP, old protocols, scanners, timeouts)"),
            java.util.Map.entry("sluice.client.idle.closes", "keep-alive client connections closed after http.idle_timeout with no request"));
}
