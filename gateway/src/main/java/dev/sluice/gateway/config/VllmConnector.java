package dev.sluice.gateway.config;

import java.util.Locale;

/**
 * The KV connector the vLLM workers run ({@code --kv-transfer-config '{"kv_connector": ...}'}), as
 * declared by {@code vllm_kv_connector}. The gateway speaks NixlConnector's handoff; the others
 * need what it cannot give, so a config naming one is refused at {@code check-config} instead of
 * every request failing with a 502 (docs/compatibility.md row 13).
 */
public enum VllmConnector {
    /** NixlConnector: the prefill answers kv_transfer_params, the decode leg carries them. Supported. */
    NIXL(null),
    /**
     * P2pNcclConnector: the peers find each other through the request id
     * ({@code ___prefill_addr_host:port___decode_addr_host:port_uuid}, the workers' ZMQ KV addresses
     * that they register with vLLM's own proxy: vllm-project/vllm
     * {@code vllm/distributed/kv_transfer/kv_connector/v1/p2p/p2p_nccl_connector.py},
     * {@code parse_request_id}). The gateway does not know those addresses.
     */
    P2P_NCCL("P2pNcclConnector addresses the KV transfer by request id (___prefill_addr_HOST:PORT___decode_addr_"
            + "HOST:PORT_..., the workers' ZMQ KV ports, registered with vLLM's own proxy), which the gateway cannot "
            + "build; run the workers with NixlConnector"),
    /**
     * MooncakeConnector: the router mints a {@code transfer_id} for both legs and gives the decode the
     * prefill's bootstrap address and engine id, read from the prefill's registration.
     */
    MOONCAKE("MooncakeConnector needs a router-minted transfer_id on both legs and the prefill's bootstrap address "
            + "and engine id on the decode leg, which the gateway does not implement; run the workers with "
            + "NixlConnector");

    private final String unsupported;

    VllmConnector(String unsupported) {
        this.unsupported = unsupported;
    }

    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Why the gateway cannot pair requests across workers running this connector; null when it can. */
    public String unsupported() {
        return unsupported;
    }
}
