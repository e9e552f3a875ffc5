package dev.sluice.testbed.load.offline;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/** Random and hand-made instances for the offline scheduler's tests. */
final class Instances {
    private Instances() {
    }

    /** Releases in [0, 100), sizes 5-40, slack 0-60 past release + size: tight enough that choices matter. */
    static List<OfflineJob> random(Random random, int n) {
        List<OfflineJob> jobs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            double r = random.nextInt(100);
            double p = 5 + random.nextInt(36);
            double d = r + p + random.nextInt(61);
            jobs.add(new OfflineJob(i, random.nextBoolean() ? "a" : "b", r, p, d));
        }
        return jobs;
    }

    /** One size, one patience: deadlines agreeable by construction; bursts (equal releases) likely. */
    static List<OfflineJob> equalSizeAgreeable(Random random, int n) {
        double p = 5 + random.nextInt(20);
        double patience = p + random.nextInt(50);
        List<OfflineJob> jobs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            double r = random.nextInt(3) == 0 ? 0 : random.nextInt(80);
            // a mild per-job deadline change that keeps the (release, deadline) order agreeable
            jobs.add(new OfflineJob(i, null, r, p, r + patience + r / 4));
        }
        return jobs;
    }

    /**
     * The overload benchmark's shape: {@code burst} prompts at t = 0 and a Poisson tail at
     * {@code rate}/s for {@code tailSeconds}, prompts of {@code tokens} ± {@code jitter} (fraction),
     * SLO (and patience) {@code sloMs}, prefill at 2,500 tokens/s, 50 ms overhead.
     */
    static List<OfflineJob> bench(Random random, int burst, double rate, double tailSeconds, int tokens,
                                  double jitter, double sloMs) {
        List<Double> sends = new ArrayList<>();
        for (int i = 0; i < burst; i++) {
            sends.add(0.0);
        }
        double t = 0;
        while (true) {
            t += -Math.log(1 - random.nextDouble()) / rate;
            if (t >= tailSeconds) {
                break;
            }
            sends.add(t * 1000);
        }
        List<OfflineJob> jobs = new ArrayList<>();
        for (int i = 0; i < sends.size(); i++) {
            long size = Math.round(tokens * (1 + (random.nextDouble() * 2 - 1) * jitter));
            double p = size * 1000.0 / 2500;
            jobs.add(new OfflineJob(i, i < burst ? "burst" : "tail", sends.get(i), p, sends.get(i) + sloMs - 50));
        }
        return jobs;
    }
}
