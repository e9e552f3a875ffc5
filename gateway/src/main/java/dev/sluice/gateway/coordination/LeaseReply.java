package dev.sluice.gateway.coordination;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What one renewal got back: this replica's generation (a new one when it joined or its lease had
 * lapsed), Redis's clock, its grant per resource, its target per resource (the part it would hold
 * once the others have given back theirs: the grant is the target capped by what they still hold),
 * and every live member as the script saw it.
 */
public record LeaseReply(long generation, long serverMillis, boolean joined, Map<String, Long> grants,
                         Map<String, Long> targets, List<Peer> members) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * One live replica: its lease (grant, usage, demand, capacity) per resource, when Redis last heard
     * of it, and the prompt tokens it routed to each prefill worker lately, as of then ({@code routed}).
     */
    public record Peer(String replicaId, long generation, String address, long seenMillis, long expiresMillis,
                       Map<String, Lease> leases, Map<String, Double> routed) {
    }

    /** One replica's lease on one resource. */
    public record Lease(long grant, long usage, long demand, long capacity) {
    }

    static LeaseReply parse(String json) {
        try {
            JsonNode n = JSON.readTree(json);
            Map<String, Long> grants = new HashMap<>();
            n.path("grants").fields().forEachRemaining(e -> grants.put(e.getKey(), e.getValue().asLong()));
            Map<String, Long> targets = new HashMap<>();
            n.path("targets").fields().forEachRemaining(e -> targets.put(e.getKey(), e.getValue().asLong()));
            List<Peer> members = new ArrayList<>();
            for (JsonNode m : n.path("members")) {
                Map<String, Lease> leases = new HashMap<>();
                m.path("r").fields().forEachRemaining(e -> leases.put(e.getKey(), new Lease(e.getValue().path(0).asLong(),
                        e.getValue().path(1).asLong(), e.getValue().path(2).asLong(), e.getValue().path(3).asLong())));
                Map<String, Double> routed = new HashMap<>();
                m.path("l").fields().forEachRemaining(e -> {
                    if (e.getValue().isNumber()) {
                        routed.put(e.getKey(), e.getValue().asDouble());
                    }
                });
                members.add(new Peer(m.path("id").asText(), m.path("gen").asLong(), m.path("addr").asText(),
                        m.path("seen").asLong(), m.path("exp").asLong(), Map.copyOf(leases), Map.copyOf(routed)));
            }
            members.sort(java.util.Comparator.comparing(Peer::replicaId).thenComparingLong(Peer::generation));
            return new LeaseReply(n.path("gen").asLong(), n.path("now").asLong(), n.path("joined").asBoolean(),
                    Map.copyOf(grants), Map.copyOf(targets), List.copyOf(members));
        } catch (IOException e) {
            throw new UncheckedIOException("lease script reply: " + e.getMessage(), e);
        }
    }
}
