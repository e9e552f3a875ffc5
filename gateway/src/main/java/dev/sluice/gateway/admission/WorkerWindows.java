package dev.sluice.gateway.admission;

import dev.sluice.gateway.config.AdmissionConfig;
import dev.sluice.gateway.routing.Worker;
import dev.sluice.gateway.routing.WorkerSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What each worker has been given and not yet finished: per prefill worker, requests and prompt
 * tokens dispatched and not yet prefilled (its window); per decode worker, requests until they
 * end. Picks the pair for the next request, round robin among usable workers with room (the
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

    /** A usable prefill worker whose window takes {@code tokens} more (alone, if it is larger), or null. */
    Worker pickPrefill(long tokens) {
        List<Worker> list = workers.prefill();
        for (int i = 0; i < list.size(); i++) {
            Worker w = list.get(Math.floorMod(prefillCursor + i, list.size()));
            Window win = windows.get(w);
            if (w.isUsable() && win.requests < config.prefillMaxInflightRequests()
                    && (win.requests == 0 || win.tokens + tokens <= config.prefillMaxInflightTokens())) {
                prefillCursor = Math.floorMod(prefillCursor + i + 1, list.size());
                return w;
            }
        }
        return null;
    }

    /** A usable decode worker below its stream cap, or null. */
    Worker pickDecode() {
        List<Worker> list = workers.decode();
        for (int i = 0; i < list.size(); i++) {
            Worker w = list.get(Math.floorMod(decodeCursor + i, list.size()));
            if (w.isUsable() && windows.get(w).requests < config.decodeMaxInflightStreams()) {
                decodeCursor = Math.floorMod(decodeCursor + i + 1, list.size());
                return w;
            }
        }
        return null;
    }

    void dispatched(Worker prefill, Worker decode, long tokens) {
        Window p = windows.get(prefill);
        p.requests++;
        p.tokens += tokens;
        windows.get(decode).requests++;
    }

    void prefillDone(Worker prefill, long tokens) {
        Window p = windows.get(prefill);
        p.requests--;
        p.tokens -= tokens;
    }

    void decodeEnded(Worker decode) {
        windows.get(decode).requests--;
    }

    /** "host:port|role" → {requests, tokens}. */
    Map<String, int[]> snapshot() {
        Map<String, int[]> out = new HashMap<>();
        windows.forEach((w, win) -> out.put(w.name() + "|" + w.role().label(),
                new int[] {win.requests, (int) Math.min(Integer.MAX_VALUE, win.tokens)}));
        return out;
    }

    private static final class Window {
        int requests;
        long tokens;
    }
}
