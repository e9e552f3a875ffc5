package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What each worker has been given and not yet finished: per prefill worker, requests and prompt
 * tokens dispatched and not yet prefilled (its window); per decode worker, requests until they
 * end. Picks the pair for the next request, round robin among routable workers with room (the
 * place for load- or prefix-aware routing later). Guarded by the controller's lock.
 */
final class WorkerWindows {
    private final AdmissionConfig config;
    private final WorkerSet workers;
    private final Map<Worker, Window> windows = new HashMap<>();
    private int prefillCursor;
    private int decodeCursor;

    WorkerWindows(AdmissionConfig config, WorkerSet workers) {
        this.config = config;
        this.workers = workers;
        for (Worker w : workers.all()) {
            windows.put(w, new Window());
        }
    }

    /**
     * A routable prefill worker whose window takes {@code tokens} more (alone, if it is larger),
     * or null. Workers in {@code avoid} (where this request already failed) are taken only when no
     * other one fits.
     */
    Worker pickPrefill(long tokens, Set<Worker> avoid) {
        Worker w = pick(workers.prefill(), true, tokens, avoid, false);
        return w != null || avoid.isEmpty() ? w : pick(workers.prefill(), true, tokens, avoid, true);
    }

    /** A routable decode worker below its stream cap, or null; {@code avoid} as for prefill. */
    Worker pickDecode(Set<Worker> avoid) {
        Worker w = pick(workers.decode(), false, 0, avoid, false);
        return w != null || avoid.isEmpty() ? w : pick(workers.decode(), false, 0, avoid, true);
    }

    private Worker pick(List<Worker> list, boolean prefill, long tokens, Set<Worker> avoid, boolean avoidedToo) {
        int cursor = prefill ? prefillCursor : decodeCursor;
        for (int i = 0; i < list.size(); i++) {
            Worker w = list.get(Math.floorMod(cursor + i, list.size()));
            if (!w.routable() || (avoid.contains(w) != avoidedToo) || !fits(w, prefill, tokens)) {
                continue;
            }
            if (prefill) {
                prefillCursor = Math.floorMod(cursor + i + 1, list.size());
            } else {
                decodeCursor = Math.floorMod(cursor + i + 1, list.size());
            }
            return w;
        }
        return null;
    }

    private boolean fits(Worker w, boolean prefill, long tokens) {
        Window win = windows.get(w);
        if (!prefill || workers.unified()) {
            // a unified worker's streams are capped like a decode's, its prompts windowed like a prefill's
            boolean streamRoom = win.streams < config.decodeMaxInflightStreams();
            if (!prefill) {
                return streamRoom;
            }
            if (!streamRoom) {
                return false;
            }
        }
        return win.prefillRequests < config.prefillMaxInflightRequests()
                && (win.prefillRequests == 0 || win.prefillTokens + tokens <= config.prefillMaxInflightTokens());
    }

    /** Prompt tokens in a prefill worker's window (for the expected prefill time of a new request). */
    long windowTokens(Worker prefill) {
        return windows.get(prefill).prefillTokens;
    }

    void dispatched(Worker prefill, Worker decode, long tokens) {
        Window p = windows.get(prefill);
        p.prefillRequests++;
        p.prefillTokens += tokens;
        windows.get(decode).streams++;
    }

    void prefillDone(Worker prefill, long tokens) {
        Window p = windows.get(prefill);
        p.prefillRequests--;
        p.prefillTokens -= tokens;
    }

    void decodeEnded(Worker decode) {
        windows.get(decode).streams--;
    }

    /** "host:port|role" → {requests, tokens}: a prefill's window, a decode's streams, a unified worker's streams and prompt tokens. */
    Map<String, int[]> snapshot() {
        Map<String, int[]> out = new HashMap<>();
        windows.forEach((w, win) -> {
            int tokens = (int) Math.min(Integer.MAX_VALUE, win.prefillTokens);
            int[] v = switch (w.role()) {
                case PREFILL -> new int[] {win.prefillRequests, tokens};
                case DECODE -> new int[] {win.streams, 0};
                case UNIFIED -> new int[] {win.streams, tokens};
            };
            out.put(w.name() + "|" + w.role().label(), v);
        });
        return out;
    }

    /** Admission's idea of each worker's load, for the routing policies. */
    private static final class Window {
        /** Dispatched and not yet prefilled (a prefill's or unified worker's window). */
        int prefillRequests;
        long prefillTokens;
        /** Dispatched and not yet ended (a decode's or unified worker's streams). */
        int streams;
    }
}
