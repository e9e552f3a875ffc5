package dev.sluice.gateway.pd;

import java.util.List;

/**
 * What the gateway wrote into a request to pair its halves: the request id, one rid and one
 * bootstrap room per item (one item for an unbatched request).
 */
public record BootstrapAssignment(String rid, List<String> itemRids, List<Long> rooms, boolean batched) {
    public BootstrapAssignment {
        itemRids = List.copyOf(itemRids);
        rooms = List.copyOf(rooms);
    }
}
