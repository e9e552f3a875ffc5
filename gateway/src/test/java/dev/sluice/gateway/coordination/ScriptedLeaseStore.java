package dev.sluice.gateway.coordination;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.stream.Collectors;

/**
 * A {@link LeaseStore} the test answers by hand, for {@link FleetLeases}' own logic (what it does with an
 * answer, a late one, a missing one, an exception): each renewal waits until the test completes it, or
 * throws what the test asked it to. What Redis answers is lease.lua's business (LeaseScriptTest, on a real
 * redis-server). Touched on the test's thread only (FleetLeases runs on an embedded event loop there).
 */
final class ScriptedLeaseStore implements LeaseStore {
    /** One renewal as sent. */
    record Renewal(String replicaId, long generation, String demandJson, CompletableFuture<String> answer) {
    }

    private final List<Renewal> renewals = new ArrayList<>();
    private Throwable throwNext;

    /** The next renewal throws {@code t} instead of returning (once). */
    void throwNext(Throwable t) {
        throwNext = t;
    }

    List<Renewal> renewals() {
        return renewals;
    }

    Renewal last() {
        return renewals.get(renewals.size() - 1);
    }

    @Override
    public CompletionStage<String> renew(String replicaId, String address, long generation, long ttlMillis,
                                         String demandJson, String routedJson, boolean draining) {
        Throwable t = throwNext;
        if (t != null) {
            throwNext = null;
            if (t instanceof Error e) {
                throw e;
            }
            throw (RuntimeException) t;
        }
        Renewal r = new Renewal(replicaId, generation, demandJson, new CompletableFuture<>());
        renewals.add(r);
        return r.answer();
    }

    @Override
    public CompletionStage<Void> release(String replicaId, long generation) {
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public void close() {
    }

    /** The script's answer to {@code r}: these grants (by Redis name), targets the same, the replica the only member. */
    static String answer(Renewal r, Map<String, Long> grants) {
        String g = grants.entrySet().stream().map(e -> "\"" + e.getKey() + "\":" + e.getValue())
                .collect(Collectors.joining(",", "{", "}"));
        return "{\"gen\":" + r.generation() + ",\"now\":1000,\"joined\":false,\"grants\":" + g + ",\"targets\":" + g
                + ",\"members\":[{\"id\":\"" + r.replicaId() + "\",\"gen\":" + r.generation()
                + ",\"addr\":\"x\",\"seen\":1000,\"exp\":3000,\"r\":{},\"l\":{}}]}";
    }
}
