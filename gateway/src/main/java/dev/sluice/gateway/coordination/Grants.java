package dev.sluice.gateway.coordination;

import java.util.HashMap;
import java.util.Map;

/** A lease answer's grants and targets, by resource. */
final class Grants {
    private Grants() {
    }

    /** By resource; names this version does not know are left out. */
    static Map<Resource, Long> byResource(Map<String, Long> byName) {
        Map<Resource, Long> next = new HashMap<>();
        byName.forEach((name, g) -> {
            Resource r = Resource.parse(name);
            if (r != null) {
                next.put(r, g);
            }
        });
        return Map.copyOf(next);
    }

    /**
     * The budgets (not the tenants' rates) at least at the script's targets: the others have given
     * back what this replica's part needs, so it serves on a correct budget.
     */
    static boolean settled(Map<Resource, Long> grants, Map<Resource, Long> targets) {
        for (Map.Entry<Resource, Long> t : targets.entrySet()) {
            if (t.getKey().kind() != Resource.Kind.TENANT_TOKENS && grants.getOrDefault(t.getKey(), 0L) < t.getValue()) {
                return false;
            }
        }
        return true;
    }
}
