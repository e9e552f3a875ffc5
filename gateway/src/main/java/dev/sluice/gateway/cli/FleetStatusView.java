package dev.sluice.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Iterator;
import java.util.Map;

/** The {@code status} lines of {@code /admin/state} → {@code coordination}: Redis reached or not, this replica's shares, the peers. */
final class FleetStatusView {
    private FleetStatusView() {
    }

    static void render(JsonNode c, StringBuilder b) {
        if (c.isMissingNode()) {
            return;
        }
        JsonNode g = c.path("grants");
        String mode = c.path("mode").asText();
        String fleet = c.path("fleet").asText("");
        b.append(String.format("fleet    %s%s  %s  %s  replica %s#%d  %d replicas   share: queue %s  pending %s tokens%n",
                fleet.isEmpty() ? "" : fleet + "  ",
                c.path("up").asBoolean() ? "redis up" : "REDIS DOWN",
                mode.equals("fallback") ? "FALLBACK budget/" + c.path("replicas").asInt()
                        : mode.equals("held") ? "HELD (leases kept until they expire)"
                        : mode.equals("lapsed") ? "LAPSED (lease ran out: admitting nothing until renewed)" : mode,
                c.path("serving").asBoolean(true) ? "serving" : "NOT SERVING (joining or draining)",
                c.path("replica_id").asText(), c.path("generation").asLong(), c.path("replicas").asInt(),
                g.path("queue").asText("-"), g.path("pending_tokens").asText("-")));
        if (c.path("renewal_errors").asLong() > 0 || c.path("late_replies").asLong() > 0) {
            b.append(String.format("         renewal errors %d  late answers dropped %d%n", c.path("renewal_errors").asLong(),
                    c.path("late_replies").asLong()));
        }
        if (c.has("reason")) {
            b.append("         reason: ").append(c.path("reason").asText()).append('\n');
        }
        b.append(String.format("  %-28s %-22s %9s  %s%n", "PEER", "ADDRESS", "SEEN", "LEASES grant/usage/demand"));
        for (JsonNode p : c.path("peers")) {
            StringBuilder leases = new StringBuilder();
            for (Iterator<Map.Entry<String, JsonNode>> it = p.path("leases").fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                JsonNode l = e.getValue();
                leases.append(String.format("%s=%d/%d/%d ", e.getKey(), l.path("grant").asLong(),
                        l.path("usage").asLong(), l.path("demand").asLong()));
            }
            b.append(String.format("  %-28s %-22s %7dms  %s%n", p.path("replica_id").asText() + "#"
                    + p.path("generation").asLong() + (p.path("self").asBoolean() ? " (self)" : ""),
                    p.path("address").asText(), p.path("last_seen_ms_ago").asLong(), leases.toString().trim()));
        }
    }
}
