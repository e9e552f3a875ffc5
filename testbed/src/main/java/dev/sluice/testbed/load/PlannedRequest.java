package dev.sluice.testbed.load;

import java.time.Duration;
import java.util.SplittableRandom;

/**
 * What request {@code index} of an independent-requests run is, before it is sent: its prompt size
 * and client class, a function of (seed, index) only, so that two runs with one seed send the same
 * arrivals whatever the target.
 *
 * @param promptTokens  the size asked of the prompt generator (which jitters the text by ±10%)
 * @param clientClass   its class, or null when the run has none
 * @param patienceNanos when its client gives up without a first token
 * @param sloTtftNanos  its TTFT objective, -1: none
 */
record PlannedRequest(int index, int promptTokens, ClientClass clientClass, long patienceNanos, long sloTtftNanos) {
    /** A salt that keeps these draws apart from the prompt text's (Prompts seeds by seed and index too). */
    private static final long SALT = 0x5DEECE66DL;

    static PlannedRequest of(LoadSpec spec, int index) {
        LoadOptions o = spec.options();
        SplittableRandom r = new SplittableRandom((spec.seed() ^ SALT) * 0x9E3779B97F4A7C15L + index);
        double sizeDraw = r.nextDouble();
        double classDraw = r.nextDouble();
        int tokens = o.promptRange() ? logUniform(o.promptMin(), o.promptMax(), sizeDraw) : spec.promptTokens();
        ClientClass c = pick(o, classDraw);
        Duration patience = c == null ? spec.clientTimeout() : c.patience();
        Duration slo = c == null ? spec.sloTtft() : c.patience();
        return new PlannedRequest(index, tokens, c, patience.toNanos(), slo == null ? -1 : slo.toNanos());
    }

    /**
     * Log-uniform in [min, max]: each doubling of the size is equally likely. Prompt lengths of real
     * chat and RAG traffic are right-skewed (many short, a long tail); log-uniform keeps that shape
     * with no fitted parameters, where uniform would make long prompts as common as short ones.
     */
    static int logUniform(int min, int max, double u) {
        if (min == max) {
            return min;
        }
        double v = Math.exp(Math.log(min) + u * (Math.log(max) - Math.log(min)));
        return (int) Math.max(min, Math.min(max, Math.round(v)));
    }

    private static ClientClass pick(LoadOptions o, double u) {
        if (o.classes().isEmpty()) {
            return null;
        }
        double acc = 0;
        for (ClientClass c : o.classes()) {
            acc += c.share();
            if (u < acc) {
                return c;
            }
        }
        return o.classes().get(o.classes().size() - 1);
    }

    String className() {
        return clientClass == null ? null : clientClass.name();
    }
}
