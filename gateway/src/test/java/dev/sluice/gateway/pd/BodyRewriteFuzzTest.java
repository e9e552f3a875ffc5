package dev.sluice.gateway.pd;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.gateway.api.ApiException;
import dev.sluice.gateway.api.GenerationRequest;
import dev.sluice.gateway.api.GenerationRoute;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Map;

/**
 * Every body a worker gets, for any client body that passes validation: valid JSON, one object,
 * the gateway-owned fields exactly the gateway's (bootstrap injection spliced into the client's
 * own bytes, or the tree path when the client sent one of them in any spelling; vLLM's two legs with
 * kv_transfer_params), and every other client field unchanged.
 */
class BodyRewriteFuzzTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @FuzzTest(maxDuration = "10s")
    void workerBodiesCarryTheGatewaysFieldsAndTheClientsRest(FuzzedDataProvider data) throws Exception {
        GenerationRoute route = data.pickValue(GenerationRoute.values());
        long room = data.consumeLong();
        String host = data.consumeString(40);
        byte[] body = data.consumeRemainingAsBytes();
        GenerationRequest request;
        ByteBuf in = Unpooled.wrappedBuffer(body);
        try {
            request = GenerationRequest.parse(route, in);
        } catch (ApiException refused) {
            return; // a 400: nothing reaches a worker (RequestParsingFuzzTest checks those)
        } finally {
            in.release();
        }
        String fields = WorkerBodies.member("bootstrap_host", host) + ",\"bootstrap_port\":8998,\"bootstrap_room\":"
                + room + "," + WorkerBodies.member("rid", "sluice-000000000000000000000001");
        ByteBuf spliced = WorkerBodies.spliced(ByteBufAllocator.DEFAULT, request, fields);
        ObjectNode sent;
        if (spliced != null) {
            try {
                sent = (ObjectNode) JSON.readTree(spliced.toString(StandardCharsets.UTF_8));
            } finally {
                spliced.release();
            }
        } else {
            sent = WorkerBodies.clientCopy(request.body());
            sent.put("bootstrap_host", host).put("bootstrap_port", 8998).put("bootstrap_room", room)
                    .put("rid", "sluice-000000000000000000000001");
            sent = (ObjectNode) JSON.readTree(JSON.writeValueAsBytes(sent)); // what goes on the wire
        }
        assertThat(sent.path("bootstrap_host").asText()).isEqualTo(host);
        assertThat(sent.path("bootstrap_room").asLong()).isEqualTo(room);
        assertThat(sent.path("rid").asText()).isEqualTo("sluice-000000000000000000000001");
        assertThat(sent.has("kv_transfer_params")).isFalse();
        assertClientFieldsKept(request.body(), sent);

        ObjectNode prefill = WorkerBodies.vllmPrefillLeg(request.body());
        assertThat(prefill.path("kv_transfer_params").path("do_remote_decode").asBoolean()).isTrue();
        assertThat(prefill.path("max_tokens").asInt()).isEqualTo(1);
        assertThat(prefill.path("stream").asBoolean()).isFalse();
        assertThat(prefill.has("rid")).isFalse();
        ObjectNode kv = JsonNodeFactory.instance.objectNode().put("remote_engine_id", "e").put("remote_host", "10.0.0.9");
        ObjectNode decode = WorkerBodies.vllmDecodeLeg(request.body(), kv);
        assertThat(decode.get("kv_transfer_params")).isEqualTo(kv);
        assertThat(decode.has("bootstrap_room")).isFalse();
        assertClientFieldsKept(request.body(), decode);
    }

    private static void assertClientFieldsKept(ObjectNode client, ObjectNode sent) {
        Iterator<Map.Entry<String, JsonNode>> it = client.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            if (!WorkerBodies.GATEWAY_OWNED.contains(e.getKey())) {
                assertThat(sent.get(e.getKey())).as("client field %s", e.getKey()).isEqualTo(e.getValue());
            }
        }
    }
}
