package dev.sluice.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A worker's host as a trace's server.address names it, beside its host:port name. */
class WorkerAddressTest {
    private static Worker worker(String url) {
        return new Worker(WorkerRole.PREFILL, WorkerEndpoint.of(url, null, Optional.empty()));
    }

    @Test
    void anIpv6LiteralLosesItsBracketsAndANameOrIpv4StaysAsItIs() {
        assertThat(worker("http://[::1]:30000").address()).isEqualTo("::1");
        assertThat(worker("http://[::1]:30000").host()).isEqualTo("[::1]");
        assertThat(worker("http://10.0.0.1:30000").address()).isEqualTo("10.0.0.1");
        assertThat(worker("https://gpu-3.internal").address()).isEqualTo("gpu-3.internal");
    }
}
