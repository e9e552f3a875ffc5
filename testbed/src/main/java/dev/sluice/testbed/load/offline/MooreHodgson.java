package dev.sluice.testbed.load.offline;

import java.util.Arrays;

/**
 * Moore and Hodgson's algorithm for one machine without release dates (1||ΣU_j): jobs in due-date
 * order, and whenever the one just added is late, the longest so far is dropped. It is optimal for
 * that problem (Moore 1968), which makes it an upper bound here once release dates are relaxed:
 * any set of jobs that can all be on time with releases can be on time without them.
 */
final class MooreHodgson {
    private MooreHodgson() {
    }

    /**
     * The most of {@code n} jobs (processing {@code p[i]}, due {@code due[i]}) that one machine free
     * from {@code fromMs}, with every job available then, can finish on time. Sorts a copy.
     */
    static int maxOnTime(double fromMs, double[] due, double[] p, int n) {
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> Double.compare(due[a], due[b]));
        MaxHeap kept = new MaxHeap(n);
        double t = fromMs;
        for (int k = 0; k < n; k++) {
            int i = order[k];
            kept.push(p[i]);
            t += p[i];
            if (!Timeline.meets(t, due[i])) {
                t -= kept.pop();
            }
        }
        return kept.size();
    }

    /** A max-heap of doubles, for the processing times kept so far. */
    static final class MaxHeap {
        private final double[] a;
        private int size;

        MaxHeap(int capacity) {
            a = new double[Math.max(1, capacity)];
        }

        int size() {
            return size;
        }

        void clear() {
            size = 0;
        }

        void push(double v) {
            int i = size++;
            a[i] = v;
            while (i > 0 && a[(i - 1) / 2] < a[i]) {
                double t = a[i];
                a[i] = a[(i - 1) / 2];
                a[(i - 1) / 2] = t;
                i = (i - 1) / 2;
            }
        }

        double pop() {
            double top = a[0];
            a[0] = a[--size];
            int i = 0;
            while (true) {
                int l = 2 * i + 1;
                int r = l + 1;
                int m = i;
                if (l < size && a[l] > a[m]) {
                    m = l;
                }
                if (r < size && a[r] > a[m]) {
                    m = r;
                }
                if (m == i) {
                    return top;
                }
                double t = a[i];
                a[i] = a[m];
                a[m] = t;
                i = m;
            }
        }
    }
}
