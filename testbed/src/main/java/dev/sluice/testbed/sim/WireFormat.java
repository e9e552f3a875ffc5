package dev.sluice.testbed.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** How one route shapes its stream events and whole responses. */
interface WireFormat {
    /** The event for the token an item just generated ({@code item.generated} counts it). */
    ObjectNode tokenEvent(Exchange ex, SimItem item, boolean last);

    /** The event after an item ended, or null when its last token event already said so. */
    ObjectNode finishEvent(Exchange ex, SimItem item);

    /** The usage event before {@code [DONE]} when the client asked for it, or null. */
    ObjectNode usageEvent(Exchange ex);

    JsonNode fullResponse(Exchange ex);
}
