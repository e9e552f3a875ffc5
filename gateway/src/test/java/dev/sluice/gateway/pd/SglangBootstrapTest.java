package dev.sluice.gateway.pd;

import dev.sluice.gateway.testing.Requests;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.GenerationRoute;
import dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerRole;
import org.junit.jupiter.api.Test;

class SglangBootstrapTest {
    private static final Worker PREFILL = new Worker(WorkerRole.PREFILL,
            new WorkerEndpoint("http://10.0.0.5:30000", "10.0.0.5", 30000, 8998));

    private static GenerationRequest req(GenerationRoute route, String json) throws Exception {
        return Requests.parse(route, json);
    }

    @Test
    void overwritesEveryGatewayOwnedField() throws Exception {
        GenerationRequest r = req(GenerationRoute.GENERATE, "{\"text\":\"x\",\"bootstrap_host\":\"evil\",\"bootstrap_port\":1,"
                + "\"bootstrap_room\":7,\"rid\":\"mine\",\"kv_transfer_params\":{\"remote_host\":\"evil\"}}");
        BootstrapAssignment a = SglangBootstrap.assign(r, PREFILL, "sluice-abc");

        assertThat(r.body().get("bootstrap_host").asText()).isEqualTo("10.0.0.5");
        assertThat(r.body().get("bootstrap_port").asInt()).isEqualTo(8998);
        assertThat(r.body().get("bootstrap_room").asLong()).isEqualTo(a.rooms().get(0)).isNotNegative();
        assertThat(r.body().get("rid").asText()).isEqualTo("sluice-abc");
        assertThat(r.body().has("kv_transfer_params")).isFalse();
        assertThat(a.batched()).isFalse();
    }

    @Test
    void aNullBootstrapPortMeansTheServersDefault() throws Exception {
        Worker noPort = new Worker(WorkerRole.PREFILL, new WorkerEndpoint("http://h:1", "h", 1, null));
        GenerationRequest r = req(GenerationRoute.GENERATE, "{\"text\":\"x\"}");
        SglangBootstrap.assign(r, noPort, "sluice-1");
        assertThat(r.body().get("bootstrap_port").isNull()).isTrue();
    }

    @Test
    void batchesGetOneFreshRoomPerPrompt() throws Exception {
        // rooms and rids are per prompt, never per parallel sample (SGLang's io_struct multiplies them itself)
        GenerationRequest r = req(GenerationRoute.COMPLETIONS,
                "{\"prompt\":[\"a\",\"b\",\"c\"],\"bootstrap_room\":[1,1,1]}");
        BootstrapAssignment a = SglangBootstrap.assign(r, PREFILL, "sluice-b");

        assertThat(a.rooms()).hasSize(3).doesNotHaveDuplicates();
        assertThat(r.body().get("bootstrap_room").size()).isEqualTo(3);
        assertThat(r.body().get("bootstrap_host").get(2).asText()).isEqualTo("10.0.0.5");
        assertThat(a.itemRids()).containsExactly("sluice-b-0", "sluice-b-1", "sluice-b-2");
    }

    @Test
    void requestIdsHaveAFixedLengthSoNoneIsAPrefixOfAnother() {
        assertThat(RequestIds.next()).hasSize(RequestIds.next().length()).startsWith("sluice-");
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (int i = 0; i < 1000; i++) {
            String rid = RequestIds.next();
            assertThat(rid).matches("sluice-[0-9a-f]{24}");
            seen.add(rid);
        }
        assertThat(seen).hasSize(1000);
    }
}
