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

    /** Opens the publisher of one rank on one endpoint (fails when its port is taken). */
    interface RankBinder {
        KvEventPublisher bind(String endpoint, int rank);
    }

    /**
     * One publisher per rank, rank r on {@code endpoint}'s port + r. With port {@code *} rank 0 binds
     * any free port and the others the ports after it, so that a subscriber finds rank r at rank 0's
     * port + r as it would on a real server; when one of those is taken, all are closed and tried
     * again from another free port.
     */
    static KvEventPublisher[] bindRanks(String endpoint, int ranks, RankBinder binder) {
        boolean any = endpoint.endsWith(":*");
        RuntimeException last = null;
        for (int attempt = 0; attempt < (any ? 20 : 1); attempt++) {
            KvEventPublisher[] out = new KvEventPublisher[ranks];
            try {
                out[0] = binder.bind(endpoint, 0);
                String rank0 = out[0].endpoint();
                for (int r = 1; r < ranks; r++) {
                    out[r] = binder.bind(offset(rank0, r), r);
                }
                return out;
            } catch (RuntimeException e) {
                last = e;
                for (KvEventPublisher p : out) {
                    if (p != null) {
                        p.close();
                    }
                }
            }
        }
        throw last;
    }
}
