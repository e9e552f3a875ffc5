package dev.sluice.gateway.config;

/**
 * A file in which every section differs from the reload tests' running one (vLLM mode, in a pool), with
 * the routing section left to the test ({@code ConfigSectionTest}, {@code ReloadPlanTest}).
 */
final class EverySectionChanged {
    private EverySectionChanged() {
    }

    static GatewayConfig parse(String routing, String source) {
        return ConfigLoader.parse("""
                listen: { port: 9090 }
                pools:
                  - name: big
                    models: [big-model]
                    disaggregation: vllm
                    workers:
                      prefill: [ { url: "http://10.0.1.1:8100" } ]
                      decode: [ { url: "http://10.0.1.2:8200" } ]
                    health: { interval: 3s }
                    admission: { max_queued_requests: 7 }
                    routing: ROUTING
                timeouts: { connect: 750ms }
                http: { max_request_body: 1MiB }
                upstream: { idle_timeout: 3s }
                admission: { tokenizer: { threads: 3 } }
                telemetry: { interval: 2s }
                admin: { port: 9091 }
                coordination: { redis: { url: "redis://10.0.1.9:6379" } }
                tracing: { otlp: { endpoint: "http://10.0.1.9:4317" } }
                retries: { max_retries: 0 }
                logging: { requests: none }
                """.replace("ROUTING", routing), source);
    }
}
