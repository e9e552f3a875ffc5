package dev.sluice.testbed.sim;

/** Endpoint arithmetic of SGLang's KV event publisher. */
final class KvEventEndpoints {
    private KvEventEndpoints() {
    }

    /**
     * {@code endpoint} with its port moved up by {@code offset}, as SGLang's
     * {@code ZmqEventPublisher.offset_endpoint_port} does for DP ranks
     * (sgl-project/sglang@612d579090db24ec7c47cc5ca6b83e0c649b8c28
     * python/sglang/srt/disaggregation/kv_events.py); a {@code *} port (any free one) stays.
     */
    static String offset(String endpoint, int offset) {
        int colon = endpoint.lastIndexOf(':');
        String port = endpoint.substring(colon + 1);
        if (offset == 0 || colon < 0 || port.equals("*")) {
            return endpoint;
        }
        return endpoint.substring(0, colon + 1) + (Integer.parseInt(port) + offset);
    }
}
