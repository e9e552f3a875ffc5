package dev.sluice.gateway.admission;

/**
 * What is served before a queued ticket ({@link PriorityQueues#place}): how many tickets, their
 * prompt tokens, and the longest prompt among those of its own class that may still give way (not
 * committed; null if none), found from the
 * queue's indexes without a walk. Tokens are summed as integers, so a forecast from them is the one
 * a walk in service order gives, to the bit.
 */
final class QueuePlace {
    int count;
    long tokens;
    Ticket longestOfClass;

    void add(int count, long tokens, Ticket longest) {
        this.count += count;
        this.tokens += tokens;
        this.longestOfClass = TenantQueue.longer(longestOfClass, longest);
    }
}
