package dev.sluice.gateway.deploy;

import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.LabelSelectorRequirement;
import java.util.Map;

/** Kubernetes' label selector semantics (matchLabels AND every matchExpression), as the controllers apply them. */
final class LabelSelectors {
    private LabelSelectors() {
    }

    static boolean matches(LabelSelector selector, Map<String, String> labels) {
        if (selector == null) {
            return false; // a missing selector selects nothing here (the API server would refuse most)
        }
        Map<String, String> want = selector.getMatchLabels() == null ? Map.of() : selector.getMatchLabels();
        if (want.isEmpty() && (selector.getMatchExpressions() == null || selector.getMatchExpressions().isEmpty())) {
            return false; // empty selects everything: never what a manifest here means
        }
        for (Map.Entry<String, String> e : want.entrySet()) {
            if (!e.getValue().equals(labels.get(e.getKey()))) {
                return false;
            }
        }
        if (selector.getMatchExpressions() != null) {
            for (LabelSelectorRequirement r : selector.getMatchExpressions()) {
                String v = labels.get(r.getKey());
                boolean ok = switch (r.getOperator()) {
                    case "In" -> v != null && r.getValues().contains(v);
                    case "NotIn" -> v == null || !r.getValues().contains(v);
                    case "Exists" -> v != null;
                    case "DoesNotExist" -> v == null;
                    default -> throw new AssertionError("operator " + r.getOperator());
                };
                if (!ok) {
                    return false;
                }
            }
        }
        return true;
    }

    /** A Service's selector (a plain map): every pair present. */
    static boolean matches(Map<String, String> selector, Map<String, String> labels) {
        return selector != null && !selector.isEmpty()
                && selector.entrySet().stream().allMatch(e -> e.getValue().equals(labels.get(e.getKey())));
    }
}
