package dev.sluice.gateway.testing;

import java.io.IOException;
import java.util.List;
import java.util.Map;

/**
 * What gateways saw of their KV event streams when a test gave up waiting for them, for the failure's
 * message: each gateway's {@code sluice_kv_events_*} series (up, age, gaps, resubscribes per worker and
 * rank), and the stacks of the threads that should have done something (the subscriber's, JeroMQ's I/O
 * and reaper threads): stuck in a poll, or inside JeroMQ? A stream that never came up on one replica
 * while the other's came up at once was seen twice in CI and never locally (docs/in-progress.md).
 */
final class SubscriptionReport {
    private SubscriptionReport() {
    }

    static String of(List<PdTestbed> beds) throws IOException, InterruptedException {
        StringBuilder seen = new StringBuilder();
        for (PdTestbed bed : beds) {
            seen.append("\n-- gateway ").append(bed.gateway.port()).append(':');
            for (String line : bed.metrics().split("\n")) {
                if (line.startsWith("sluice_kv_events_") || line.startsWith("sluice_kv_index_blocks")) {
                    seen.append("\n").append(line);
                }
            }
        }
        return seen + threads("kv-events", "iothread", "reaper");
    }

    /** Each live thread whose name contains one of {@code words}: its name, state and stack. */
    static String threads(String... words) {
        StringBuilder out = new StringBuilder();
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            Thread t = e.getKey();
            boolean match = false;
            for (String w : words) {
                match |= t.getName().contains(w);
            }
            if (!match) {
                continue;
            }
            out.append("\n-- thread ").append(t.getName()).append(' ').append(t.getState());
            for (StackTraceElement f : e.getValue()) {
                out.append("\n    at ").append(f);
            }
        }
        return out.toString();
    }
}
