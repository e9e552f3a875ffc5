package dev.sluice.testbed.load;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.testbed.load.RequestResult.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The numbers of a run, as JSON with stable keys (the text report and {@code compare} read this
 * object, so all three always agree). Conventions of vLLM's {@code bench serve} and SGLang's
 * {@code bench_serving}: TTFT = send to first non-empty content chunk; ITL = gaps between chunks;
 * TPOT = (E2E - TTFT) / (output tokens - 1); latencies of completed requests only; goodput =
 * completed requests per second that met every SLO given.
 */
final class LoadReport {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    /** A rejection that came later than this after its send had waited (in a queue) before being refused. */
    static final long REJECTED_AFTER_WAIT_NANOS = 1_000_000_000L;

    private LoadReport() {
    }

    /** Whether a result counts for goodput: completed, and within each SLO that is set (null: none). */
    static boolean good(RequestResult r, Duration ttft, Duration tpot, Duration e2e) {
        if (r.outcome() != Outcome.COMPLETED) {
            return false;
        }
        ttft = r.sloTtft(ttft);
        if (ttft != null && (r.ttftNanos() < 0 || r.ttftNanos() > ttft.toNanos())) {
            return false;
        }
        // one output token has no TPOT: nothing to miss (as in vLLM's goodput)
        if (tpot != null && r.tpotNanos() > tpot.toNanos()) {
            return false;
        }
        return e2e == null || r.e2eNanos() <= e2e.toNanos();
    }

    static ObjectNode clients(Collection<RequestResult> results, double durationSeconds, Duration sloTtft,
                              Duration sloTpot, Duration sloE2e) {
        ObjectNode o = F.objectNode();
        Summary ttft = new Summary();
        Summary tpot = new Summary();
        Summary itl = new Summary();
        Summary e2e = new Summary();
        Summary rejection = new Summary();
        List<Double> retryAfter = new ArrayList<>();
        Map<String, Long> failedBy = new TreeMap<>();
        Map<String, Long> rejectedByStatus = new TreeMap<>();
        Map<String, Long> rejectedByCode = new TreeMap<>();
        long completed = 0;
        long gaveUp = 0;
        long gaveUpMidStream = 0;
        long failed = 0;
        long rejected = 0;
        long good = 0;
        long outputTokens = 0;
        long rejectedAfterWait = 0;
        long maxRejectionWait = 0;
        for (RequestResult r : results) {
            switch (r.outcome()) {
                case COMPLETED -> {
                    completed++;
                    outputTokens += r.outputTokens();
                    ttft.addNanos(r.ttftNanos());
                    e2e.addNanos(r.e2eNanos());
                    if (r.tpotNanos() >= 0) {
                        tpot.addNanos(r.tpotNanos());
                    }
                    for (long gap : r.itlNanos()) {
                        itl.addNanos(gap);
                    }
                }
                case GAVE_UP -> {
                    gaveUp++;
                    gaveUpMidStream += "mid_stream".equals(r.failureKind()) ? 1 : 0;
                }
                case FAILED -> {
                    failed++;
                    failedBy.merge(r.failureKind(), 1L, Long::sum);
                }
                case REJECTED -> {
                    rejected++;
                    rejection.addNanos(r.e2eNanos());
                    if (r.e2eNanos() > REJECTED_AFTER_WAIT_NANOS) {
                        rejectedAfterWait++;
                    }
                    maxRejectionWait = Math.max(maxRejectionWait, r.e2eNanos());
                    rejectedByStatus.merge(String.valueOf(r.status()), 1L, Long::sum);
                    rejectedByCode.merge(r.errorCode() == null ? "none" : r.errorCode(), 1L, Long::sum);
                    try {
                        retryAfter.add(Double.parseDouble(r.retryAfter()));
                    } catch (NullPointerException | NumberFormatException e) {
                        // absent or an HTTP date: not summarised
                    }
                }
                default -> throw new IllegalStateException();
            }
            good += good(r, sloTtft, sloTpot, sloE2e) ? 1 : 0;
        }
        double seconds = Math.max(durationSeconds, 1e-9);
        o.put("duration_s", round(durationSeconds));
        ObjectNode counts = o.putObject("counts");
        counts.put("sent", results.size());
        counts.put("completed", completed);
        counts.put("gave_up", gaveUp);
        counts.put("gave_up_before_first_token", gaveUp - gaveUpMidStream);
        counts.put("gave_up_mid_stream", gaveUpMidStream);
        counts.put("failed", failed);
        counts.put("rejected", rejected);
        o.set("failed_by_kind", toObject(failedBy));
        o.set("rejected_by_status", toObject(rejectedByStatus));
        o.set("rejected_by_code", toObject(rejectedByCode));
        o.set("rejection_latency_ms", rejection.toJson());
        ObjectNode waited = o.putObject("rejected_after_wait");
        waited.put("threshold_ms", REJECTED_AFTER_WAIT_NANOS / 1_000_000);
        waited.put("count", rejectedAfterWait);
        waited.put("max_wait_ms", round(maxRejectionWait / 1e6));
        ObjectNode ra = o.putObject("retry_after_s");
        ra.put("count", retryAfter.size());
        Summary.put(ra, "min", retryAfter.stream().mapToDouble(d -> d).min().orElse(Double.NaN));
        Summary.put(ra, "max", retryAfter.stream().mapToDouble(d -> d).max().orElse(Double.NaN));
        ObjectNode tp = o.putObject("throughput");
        tp.put("requests_per_s", round(completed / seconds));
        tp.put("output_tokens_per_s", round(outputTokens / seconds));
        tp.put("output_tokens", outputTokens);
        ObjectNode gp = o.putObject("goodput");
        gp.put("requests_per_s", round(good / seconds));
        gp.put("good_requests", good);
        ObjectNode slo = gp.putObject("slo_ms");
        putMs(slo, "ttft", sloTtft);
        putMs(slo, "tpot", sloTpot);
        putMs(slo, "e2e", sloE2e);
        ObjectNode lat = o.putObject("latency_ms");
        lat.set("ttft", ttft.toJson());
        lat.set("tpot", tpot.toJson());
        lat.set("itl", itl.toJson());
        lat.set("e2e", e2e.toJson());
        return o;
    }

    /**
     * Per client class: sent, completed, good (met its class's TTFT objective and the common ones),
     * gave up, rejected, failed, goodput per second and TTFT p50/p99. Empty without classes.
     */
    static ObjectNode byClass(Collection<RequestResult> results, double durationSeconds, Duration sloTpot,
                              Duration sloE2e) {
        Map<String, List<RequestResult>> groups = new TreeMap<>();
        for (RequestResult r : results) {
            if (r.className() != null) {
                groups.computeIfAbsent(r.className(), k -> new ArrayList<>()).add(r);
            }
        }
        ObjectNode o = F.objectNode();
        groups.forEach((name, rs) -> {
            ObjectNode c = o.putObject(name);
            Summary ttft = new Summary();
            long good = 0;
            Map<Outcome, Long> counts = new java.util.EnumMap<>(Outcome.class);
            for (RequestResult r : rs) {
                counts.merge(r.outcome(), 1L, Long::sum);
                good += good(r, null, sloTpot, sloE2e) ? 1 : 0;
                if (r.outcome() == Outcome.COMPLETED) {
                    ttft.addNanos(r.ttftNanos());
                }
            }
            c.put("sent", rs.size());
            c.put("completed", counts.getOrDefault(Outcome.COMPLETED, 0L));
            c.put("good_requests", good);
            c.put("gave_up", counts.getOrDefault(Outcome.GAVE_UP, 0L));
            c.put("rejected", counts.getOrDefault(Outcome.REJECTED, 0L));
            c.put("failed", counts.getOrDefault(Outcome.FAILED, 0L));
            c.put("goodput_requests_per_s", round(good / Math.max(durationSeconds, 1e-9)));
            c.put("slo_ttft_ms", rs.get(0).plan() == null || rs.get(0).plan().sloTtftNanos() < 0 ? null
                    : round(rs.get(0).plan().sloTtftNanos() / 1e6));
            ObjectNode lat = ttft.toJson();
            c.set("ttft_ms", lat);
        });
        return o;
    }

    /** Worker-side deltas (after minus before), per worker and summed. */
    static ObjectNode workers(List<WorkerProbe.Snapshot> before, List<WorkerProbe.Snapshot> after, boolean settled,
                              double settleSeconds) {
        ObjectNode o = F.objectNode();
        o.put("settled", settled);
        o.put("settle_s", round(settleSeconds));
        long kv = 0;
        long aborted = 0;
        long departed = 0;
        double departedSeconds = 0;
        var per = o.putArray("per_worker");
        for (int i = 0; i < after.size(); i++) {
            WorkerProbe.Snapshot b = before.get(i);
            WorkerProbe.Snapshot a = after.get(i);
            ObjectNode w = per.addObject();
            w.put("url", a.url().toString());
            w.put("role", a.role());
            long dKv = Math.round(a.metric(WorkerProbe.KV_FAILED) - b.metric(WorkerProbe.KV_FAILED));
            long dAborted = Math.round(a.metric(WorkerProbe.ABORTED) - b.metric(WorkerProbe.ABORTED));
            long dDeparted = Math.round(a.stat("workForDepartedClients") - b.stat("workForDepartedClients"));
            double dSeconds = a.stat("departedClientWorkSeconds") - b.stat("departedClientWorkSeconds");
            w.put("kv_transfer_failures", dKv);
            w.put("aborted_requests", dAborted);
            w.put("work_for_departed_clients", dDeparted);
            w.put("departed_client_work_seconds", round(dSeconds));
            if (a.error() != null || b.error() != null) {
                w.put("error", a.error() != null ? a.error() : b.error());
            }
            kv += dKv;
            aborted += dAborted;
            departed += dDeparted;
            departedSeconds += dSeconds;
        }
        o.put("kv_transfer_failures", kv);
        o.put("aborted_requests", aborted);
        o.put("work_for_departed_clients", departed);
        o.put("departed_client_work_seconds", round(departedSeconds));
        return o;
    }

    /**
     * One compact line per request, in index order, to trace a figure back to requests (and logs);
     * {@code turns} > 0 (chat-sessions): each also names its session and turn.
     */
    static com.fasterxml.jackson.databind.node.ArrayNode perRequest(Collection<RequestResult> results, int turns) {
        return perRequest(results, turns, Long.MIN_VALUE);
    }

    /**
     * As above; with {@code runStartNanos} (the run's first send) each line also carries what the
     * offline scheduler and the charts need: {@code send_ms}, {@code first_token_ms}, {@code end_ms}
     * and, for a rejection, {@code rejected_ms}, all since the run's start; {@code prompt_tokens},
     * {@code class}, {@code patience_ms}, {@code slo_ttft_ms}.
     */
    static com.fasterxml.jackson.databind.node.ArrayNode perRequest(Collection<RequestResult> results, int turns,
                                                                    long runStartNanos) {
        var out = F.arrayNode();
        results.stream().sorted(java.util.Comparator.comparingInt(RequestResult::index)).forEach(r -> {
            ObjectNode o = out.addObject();
            o.put("index", r.index());
            if (runStartNanos != Long.MIN_VALUE && r.plan() != null) {
                double send = (r.sentAtNanos() - runStartNanos) / 1e6;
                o.put("send_ms", round(send));
                o.put("prompt_tokens", r.plan().promptTokens());
                o.put("class", r.plan().className());
                o.put("patience_ms", round(r.plan().patienceNanos() / 1e6));
                o.put("slo_ttft_ms", r.plan().sloTtftNanos() < 0 ? null : round(r.plan().sloTtftNanos() / 1e6));
                o.put("first_token_ms", r.ttftNanos() < 0 ? null : round(send + r.ttftNanos() / 1e6));
                o.put("end_ms", round(send + r.e2eNanos() / 1e6));
                o.put("rejected_ms", r.outcome() == Outcome.REJECTED ? round(send + r.e2eNanos() / 1e6) : null);
            }
            if (turns > 0) {
                o.put("session", r.index() / turns);
                o.put("turn", r.index() % turns);
            }
            o.put("outcome", r.outcome().name().toLowerCase());
            o.put("status", r.status());
            o.put("kind", r.failureKind());
            o.put("code", r.errorCode());
            o.put("retry_after", r.retryAfter());
            o.put("ttft_ms", r.ttftNanos() < 0 ? null : round(r.ttftNanos() / 1e6));
            o.put("e2e_ms", round(r.e2eNanos() / 1e6));
            o.put("output_tokens", r.outputTokens());
            o.put("message", r.message());
        });
        return out;
    }

    private static ObjectNode toObject(Map<String, Long> m) {
        ObjectNode o = F.objectNode();
        m.forEach(o::put);
        return o;
    }

    private static void putMs(ObjectNode o, String key, Duration d) {
        if (d == null) {
            o.putNull(key);
        } else {
            o.put(key, d.toMillis());
        }
    }

    static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }
}
