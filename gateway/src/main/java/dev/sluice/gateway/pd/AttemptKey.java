package dev.sluice.gateway.pd;

import dev.sluice.gateway.routing.RankChoice;
import dev.sluice.gateway.routing.Worker;

/**
 * Which attempt at a request an event is about: its request id on the workers, its pair ({@code prefill == decode} for a unified worker or a direct decode),
 * and the data-parallel ranks admission chose on them. Compared by identity: the exchange knows a stale attempt's news by its key.
 */
record AttemptKey(String rid, Worker prefill, Worker decode, RankChoice ranks) {
    AttemptKey(String rid, Worker prefill, Worker decode) {
        this(rid, prefill, decode, RankChoice.NONE);
    }
}
