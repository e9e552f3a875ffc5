package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.api.ApiException;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.GenerationRoute;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class WorkerBodiesTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static GenerationRequest chat(String body) throws ApiException {
        return GenerationRequest.parse(GenerationRoute.CHAT_COMPLETIONS, Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
    }

    private static JsonNode spliced(GenerationRequest r, String fields) throws Exception {
        ByteBuf out = WorkerBodies.spliced(UnpooledByteBufAllocator.DEFAULT, r, fields);
        try {
            return out == null ? null : JSON.readTree(out.toString(StandardCharsets.UTF_8));
        } finally {
            if (out != null) {
                out.release();
            }
        }
    }

    @Test
    void theClientsBytesGetTheFieldsBeforeTheClosingBrace() throws Exception {
        String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\u00e9 } {\"}],\"stream\":true}\n  ";
        GenerationRequest r = chat(body);

        JsonNode out = spliced(r, "\"rid\":\"sluice-1\",\"bootstrap_room\":42");

        ObjectNode expected = (ObjectNode) JSON.readTree(body);
        expected.put("rid", "sluice-1").put("bootstrap_room", 42);
        assertThat(out).isEqualTo(expected);
        assertThat(spliced(r, "")).isEqualTo(JSON.readTree(body)); // unified: the bytes as they came
    }

    @Test
    void theSglangFieldsAreValidJsonWhateverTheHost() throws Exception {
        GenerationRequest r = chat("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");
        BootstrapAssignment a = SglangBootstrap.single("sluice-000000000000000000000001");

        JsonNode out = spliced(r, SglangBootstrap.singleFields(routingWorker(), a));

        assertThat(out.get("bootstrap_host").asText()).isEqualTo("127.0.0.1");
        assertThat(out.get("bootstrap_port").asInt()).isEqualTo(8998);
        assertThat(out.get("bootstrap_room").asLong()).isEqualTo(a.rooms().get(0));
        assertThat(out.get("rid").asText()).isEqualTo("sluice-000000000000000000000001");
        assertThat(WorkerBodies.member("h", "a\"b\\c")).isEqualTo("\"h\":\"a\\\"b\\\\c\"");
    }

    @Test
    void aClientsGatewayOwnedFieldTakesTheTreePath() throws Exception {
        for (String field : WorkerBodies.GATEWAY_OWNED) {
            GenerationRequest r = chat("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"" + field + "\":1}");
            assertThat(r.clean()).as(field).isFalse();
            assertThat(spliced(r, "\"rid\":\"x\"")).as(field).isNull();
        }
    }

    private static dev.sluice.gateway.routing.Worker routingWorker() {
        return new dev.sluice.gateway.routing.Worker(dev.sluice.gateway.routing.WorkerRole.PREFILL,
                new dev.sluice.gateway.config.GatewayConfig.WorkerEndpoint("http://127.0.0.1:30000", "127.0.0.1", 30000, 8998));
    }
}
