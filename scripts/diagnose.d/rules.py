"""The verdicts of scripts/diagnose: each rule reads the collected snapshot (see diagnose.py) and
says what is wrong in one line, with the numbers it used. A "problem" makes the exit code 1; a
"note" is worth knowing but not a fault on its own."""

import sources

# what a worker reports, by our name: its metric names (SGLang, then vLLM) and how ranks combine
WORKER_METRICS = [
    ("queue", ("sglang:num_queue_reqs", "vllm:num_requests_waiting"), sum),
    ("running", ("sglang:num_running_reqs", "vllm:num_requests_running"), sum),
    ("token_usage", ("sglang:token_usage", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"), max),
    ("gen_throughput", ("sglang:gen_throughput",), sum),
    ("bootstrap_queue", ("sglang:num_prefill_prealloc_queue_reqs", "sglang:num_prefill_bootstrap_queue_reqs"), sum),
    ("kv_inflight_queue", ("sglang:num_prefill_inflight_queue_reqs",), sum),
    ("decode_prealloc_queue", ("sglang:num_decode_prealloc_queue_reqs",), sum),
    ("decode_transfer_queue", ("sglang:num_decode_transfer_queue_reqs",), sum),
    ("transfer_failed", ("sglang:num_transfer_failed_reqs_total",), sum),
    ("bootstrap_failed", ("sglang:num_bootstrap_failed_reqs_total",), sum),
    ("aborted", ("sglang:num_aborted_requests_total",), sum),
]
# the gateway's copy, used when the worker's own /metrics cannot be read from here
TELEMETRY = {"queue": "queue_requests", "running": "running_requests", "token_usage": "token_usage",
             "gen_throughput": "gen_throughput", "transfer_failed": "transfer_failed_total",
             "bootstrap_failed": "bootstrap_failed_total"}
OVERLOAD_REJECTIONS = ("queue_full", "token_budget_exceeded", "deadline_unreachable", "evicted", "queue_timeout",
                       "no_capacity")
SATURATED = 0.9  # share of a gateway admission limit that counts as "at the limit"


def worker_metric(samples, key):
    """One worker metric by our key from its /metrics samples, or None."""
    for name, names, combine in WORKER_METRICS:
        if name != key:
            continue
        for metric in names:
            values = [v for _, v in sources.select(samples, metric) if v == v]
            if values:
                return combine(values)
    return None


def parse_instant(text):
    """An ISO-8601 instant as the gateway writes it (UTC, nanoseconds) -> aware datetime, or None."""
    if not text:
        return None
    t = sources.line_time(text if "Z" in text or "+" in text[10:] else text + "Z")
    return t


def local_hhmm(t, now):
    """14:02 (today), or 2026-12-02 14:02 for an earlier day, in local time."""
    loc, today = t.astimezone(), now.astimezone()
    return loc.strftime("%H:%M") if loc.date() == today.date() else loc.strftime("%Y-%m-%d %H:%M")


def short(text, n=160):
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 3] + "..."


class Verdicts:
    def __init__(self):
        self.items = []

    def add(self, severity, kind, message, **fields):
        item = {"severity": severity, "kind": kind, "message": message}
        item.update(fields)
        self.items.append(item)

    def problems(self):
        return [v for v in self.items if v["severity"] == "problem"]


# ---------------------------------------------------------------- workers

def cause(state, reason):
    """What the reason says happened, in a word the operator searches the runbook for."""
    r = (reason or "").lower()
    if state == "draining":
        return "draining"
    if state == "degraded":
        return "kv_full" if "kv token usage" in r else "degraded"
    if state == "half_open":
        return "on_trial"
    if state == "suspect":
        return "suspect"
    if "awaiting its first health check" in r:
        return "starting"
    if "refused" in r or "cannot connect" in r or "connect:" in r or "last connect" in r:
        return "unreachable"
    if "stall" in r or ("/health_generate" in r and ("timeout" in r or "no answer" in r)):
        return "stalled"
    if "kv_transfer" in r or "kvtransfer" in r:
        return "kv_transfer_failures"
    if "get /health failed" in r:
        return "failing_health"
    if "timeout" in r:
        return "timing_out"
    return "erroring" if ("server_error" in r or "status" in r) else "ejected"


_PHRASE = {
    "stalled": "stalled since {t} and ejected",
    "unreachable": "unreachable since {t} and ejected",
    "kv_transfer_failures": "failing KV transfers since {t} and ejected",
    "failing_health": "failing its /health check since {t} and ejected",
    "timing_out": "timing out since {t} and ejected",
    "erroring": "answering errors since {t} and ejected",
    "ejected": "ejected since {t}",
    "starting": "never seen healthy (ejected since the gateway started: awaiting its first health check)",
    "kv_full": "degraded since {t}: KV cache full, takes no new streams",
    "degraded": "degraded since {t}, takes no new requests",
    "on_trial": "on trial since {t} after an ejection (half-open)",
    "suspect": "suspect since {t}: it stalled requests while its health checks pass and no other worker of its "
               "role can take them (health.stall_panic: no client request goes to it, each is refused with 503 while the "
               "gateway probes the pair with its own requests; "
               "docs/operations.md#worker-suspect)",
    "draining": "draining since {t} (removed from the configuration)",
}


def worker_rules(snap, v, now):
    for w in snap["workers"]:
        state = w.get("state") or ("healthy" if w.get("usable") else "ejected")
        probe = w.get("probe", {})
        health = probe.get("health", {})
        if health.get("status") is not None:
            here = "its /health answers %d here" % health["status"]
        elif health.get("error"):
            here = "its /health does not answer here: %s" % short(health["error"], 80)
        else:
            here = ""
        if state == "healthy":
            if health.get("error") or (health.get("status") or 200) >= 400:
                v.add("note", "worker_unreachable_from_here",
                      "%s worker %s is healthy for the gateway but %s" % (w["role"], w["worker"], here),
                      worker=w["worker"], role=w["role"])
            tel = w.get("telemetry") or {}
            if tel and (tel.get("stale") or tel.get("last_poll_ok") is False):
                v.add("note", "telemetry_stale", "the gateway cannot read %s worker %s's /metrics or /get_load "
                      "(telemetry %s)" % (w["role"], w["worker"], "age %ss" % tel.get("age_seconds")
                                          if tel.get("age_seconds") is not None else "never read"),
                      worker=w["worker"], role=w["role"])
            continue
        c = cause(state, w.get("state_reason"))
        since = parse_instant(w.get("state_since"))
        t = local_hhmm(since, now) if since else "start-up"
        message = "%s worker %s %s" % (w["role"], w["worker"], _PHRASE[c].format(t=t))
        details = []
        if w.get("state_reason") and c != "starting":
            details.append("reason: " + short(w["state_reason"]))
        if here:
            details.append(here + (" (a hung scheduler behind a live HTTP server)"
                                   if c == "stalled" and health.get("status") == 200 else ""))
        if details:
            message += " (" + "; ".join(details) + ")"
        severity = "note" if state in ("half_open", "draining") else "problem"
        v.add(severity, "worker_" + state, message, worker=w["worker"], role=w["role"], url=w.get("url"),
              state=state, cause=c, since=since.isoformat() if since else None, since_local=t,
              reason=w.get("state_reason"))


def readiness_rules(snap, v):
    st = snap.get("state") or {}
    if st.get("draining"):
        v.add("problem", "draining", "the gateway is draining (shutting down): new requests get 503 draining")
    ready = st.get("ready") if st else snap.get("readiness", {}).get("ready")
    if ready is not False:
        return
    pools = ((snap.get("readiness") or {}).get("body") or {}).get("pools") if isinstance(
        (snap.get("readiness") or {}).get("body"), dict) else None
    if pools:  # with pools: each pool's own verdict, from /readiness (docs/operations.md)
        missing = ["pool %s: %s" % (p.get("name"), p.get("reason")) for p in pools
                   if not p.get("ready") or not p.get("started")]
        v.add("problem", "not_ready", "gateway not ready: %s; requests get 503"
              % ("; ".join(missing) if missing else "draining"), missing=missing)
        return
    roles = sorted({w["role"] for w in snap["workers"]})
    needed = ["unified"] if roles == ["unified"] else ["prefill", "decode"]
    missing = []
    for role in needed:
        ws = [w for w in snap["workers"] if w["role"] == role]
        if not any(w.get("usable") for w in ws):
            states = {}
            for w in ws:
                states[w.get("state", "?")] = states.get(w.get("state", "?"), 0) + 1
            missing.append("no usable %s worker (%s)" % (role, ", ".join("%d %s" % (n, s) for s, n in
                                                                          sorted(states.items())) or "none configured"))
    v.add("problem", "not_ready", "gateway not ready: %s; requests get 503 no_capacity"
          % ("; ".join(missing) if missing else "draining"), missing=missing)


# ---------------------------------------------------------------- queue, KV, counters

def queue_rules(snap, v):
    st = snap.get("state")
    if not st:
        return
    limits, q = st.get("limits", {}), st.get("queue", {})
    m1 = snap.get("metrics1") or []
    # two readings (the state, and the metrics after the sample); the lower one decides: a spike is not saturation
    queued = [q.get("queued", 0)]
    pending = [q.get("pending_tokens", 0)]
    if m1:
        later_q, later_p = sources.total(m1, "sluice_queue_depth"), sources.total(m1, "sluice_pending_prompt_tokens")
        queued += [later_q] if later_q is not None else []
        pending += [later_p] if later_p is not None else []
    max_q, max_p = limits.get("max_queued_requests", 0), limits.get("max_pending_tokens", 0)
    parts = []
    if max_q and min(queued) >= SATURATED * max_q:
        parts.append("%d of %d queued requests" % (min(queued), max_q))
    if max_p and min(pending) >= SATURATED * max_p:
        parts.append("%d of %d pending prompt tokens" % (min(pending), max_p))
    if parts:
        rate = q.get("prefill_tokens_per_second") or 0
        wait = " (~%.0f s of prefill ahead of a new request at %d tokens/s%s)" % (
            min(pending) / rate, rate, "" if q.get("throughput_measured") else ", estimated") if rate else ""
        v.add("problem", "queue_saturated", "prefill queue saturated: %s%s" % (", ".join(parts), wait),
              queued=min(queued), pending_tokens=min(pending), max_queued_requests=max_q, max_pending_tokens=max_p)
    window = limits.get("prefill_max_inflight_requests") or 0
    for w in snap["workers"]:
        if w["role"] != "prefill":
            continue
        own = w.get("current", {}).get("queue")
        if own is not None and window and own > window:
            v.add("problem", "prefill_worker_queue", "prefill worker %s has %d requests in its own queue, more than "
                  "the gateway's window of %d (traffic reaching it around the gateway?)" % (w["worker"], own, window),
                  worker=w["worker"], queue=own)


def kv_usage_rules(snap, v):
    threshold, source = snap["kv_threshold"]
    for w in snap["workers"]:
        if w["role"] != "decode" or w.get("state") == "degraded":
            continue  # a degraded decode was already reported with the gateway's own reason
        usage = w.get("current", {}).get("token_usage")
        if usage is not None and usage > threshold:
            v.add("problem", "decode_kv_full", "decode worker %s KV cache usage %.3f, above %.2f (%s)"
                  % (w["worker"], usage, threshold, source), worker=w["worker"], token_usage=usage)


def _deltas(before, after, name, label):
    """{label: increase} between two scrapes (a counter that went down was reset: skipped)."""
    a, b = sources.by_label(before, name, label), sources.by_label(after, name, label)
    return {k: b[k] - a.get(k, 0.0) for k in b if b[k] - a.get(k, 0.0) > 0 and k in a}


def _recent(snap, since):
    out = []
    for e in (snap.get("state") or {}).get("recent_errors", []):
        t = parse_instant(e.get("at"))
        if t is not None and t >= since:
            out.append(dict(e, time=t))
    return out


def _fmt(counts):
    return ", ".join("%s +%d" % (k, n) for k, n in sorted(counts.items(), key=lambda x: -x[1]))


def counter_rules(snap, v, since, window_text):
    m0, m1, secs = snap.get("metrics0") or [], snap.get("metrics1") or [], snap.get("sample_seconds", 0)
    recent = _recent(snap, since)
    kept_all = len((snap.get("state") or {}).get("recent_errors", []))
    # the gateway keeps the last admin.recent_errors: when all of them are in the window, there were more
    at_least = "at least " if recent and len(recent) == kept_all >= snap.get("recent_capacity", 50) else ""
    # KV transfer failures: the gateway's count, the workers' own, the recent errors, the logs
    kv_gateway = _deltas(m0, m1, "sluice_kv_transfer_failures_total", "worker") if m1 else {}
    kv_workers = {}
    for w in snap["workers"]:
        p = w.get("probe", {})
        if p.get("metrics1"):
            for key in ("transfer_failed", "bootstrap_failed"):
                a, b = worker_metric(p.get("metrics0") or [], key), worker_metric(p["metrics1"], key)
                if a is not None and b is not None and b > a:
                    kv_workers["%s %s" % (w["worker"], key)] = b - a
    kv_recent = [e for e in recent if sources.KV_LINE.search(e.get("detail") or "")]
    kv_logs = [x for x in snap.get("log_lines_all", []) if sources.KV_LINE.search(x)]
    if kv_gateway or kv_workers or kv_recent or kv_logs:
        parts = []
        if kv_gateway:
            parts.append("gateway saw %s in the last %.0f s" % (_fmt(kv_gateway), secs))
        if kv_workers:
            parts.append("workers counted %s in the last %.0f s" % (_fmt(kv_workers), secs))
        if kv_recent:
            parts.append("%s%d recent errors in the last %s name a KV transfer (newest %s, rid %s)" % (
                at_least, len(kv_recent), window_text, kv_recent[0]["time"].astimezone().strftime("%H:%M:%S"),
                kv_recent[0].get("rid")))
        if kv_logs:
            parts.append("%d log lines in the last %s mention a KV transfer failure" % (len(kv_logs), window_text))
        v.add("problem", "kv_transfer_failures", "KV transfer failures: " + "; ".join(parts),
              gateway=kv_gateway, workers=kv_workers, recent_errors=len(kv_recent), log_lines=len(kv_logs))
    elif m0:
        lifetime = sources.total(m1 or m0, "sluice_kv_transfer_failures_total") or 0
        if lifetime > 0:
            v.add("note", "kv_transfer_failures_before", "KV transfer failures: %d since the gateway started, none "
                  "%sin the recent errors or logs of the last %s (when: Prometheus, or --log)"
                  % (lifetime, "in the last %.0f s nor " % secs if m1 else "", window_text), total=lifetime)
    # rejections
    rej = _deltas(m0, m1, "sluice_rejections_total", "reason") if m1 else {}
    rej_recent = [e for e in recent if e.get("outcome") == "rejected"]
    if rej or rej_recent:
        parts = ["+%d in the last %.0f s (%s)" % (sum(rej.values()), secs, _fmt(rej))] if rej else []
        if rej_recent:
            codes = {}
            for e in rej_recent:
                code = (e.get("detail") or "?").split(":", 1)[0].strip()
                codes[code] = codes.get(code, 0) + 1
            parts.append("%s%d rejected among the recent errors of the last %s (%s)" % (
                at_least, len(rej_recent), window_text, ", ".join("%s %d" % kv for kv in
                                                               sorted(codes.items(), key=lambda x: -x[1]))))
        overload = any(r in OVERLOAD_REJECTIONS for r in rej) or any(
            any(r in (e.get("detail") or "") for r in OVERLOAD_REJECTIONS) for e in rej_recent)
        v.add("problem" if overload else "note", "rejections", "rejections: " + "; ".join(parts),
              by_reason=rej, recent=len(rej_recent))
    # aborts, and requests that failed on the workers
    aborts = _deltas(m0, m1, "sluice_aborts_total", "cause") if m1 else {}
    aborts.pop("drain", None)
    if aborts:
        v.add("note" if set(aborts) == {"client_disconnect"} else "problem", "aborts",
              "aborts rising: +%d in the last %.0f s (%s)" % (sum(aborts.values()), secs, _fmt(aborts)), by_cause=aborts)
    failed = [e for e in recent if e.get("outcome") not in ("rejected", "client_disconnect", "bad_request")
              and e not in kv_recent]
    if failed:
        counts = {}
        for e in failed:
            counts[e.get("outcome")] = counts.get(e.get("outcome"), 0) + 1
        v.add("problem", "failed_requests", "%s%d request%s failed in the last %s (%s); newest %s rid %s: %s" % (
            at_least, len(failed), "" if len(failed) == 1 else "s", window_text, ", ".join("%s %d" % kv for kv in sorted(counts.items())),
            failed[0]["time"].astimezone().strftime("%H:%M:%S"), failed[0].get("rid"),
            short(failed[0].get("detail"), 100)), by_outcome=counts)


# ---------------------------------------------------------------- host: services, GPUs

def host_rules(snap, v, gpu_full):
    for u in snap["services"].get("units", []):
        if u.get("LoadState") != "loaded":
            continue
        active, enabled = u.get("ActiveState"), u.get("UnitFileState")
        restarts = int(u.get("NRestarts") or 0)
        bad = active == "failed" or (enabled == "enabled" and active == "inactive") or (
            active == "activating" and restarts > 0)
        if bad:
            since = u.get("StateChangeTimestamp") or "?"
            v.add("problem", "service_down", "unit %s is %s (%s) since %s, result %s, %d restarts" % (
                u["unit"], active, u.get("SubState"), since, u.get("Result"), restarts), unit=u["unit"])
    g = snap["gpus"]
    if g.get("error"):
        v.add("problem", "gpu_query_failed", "%s: a GPU may have fallen off the bus or the driver is hung" % g["error"])
    for gpu in g.get("gpus", []):
        used, cap = gpu.get("used_mib"), gpu.get("total_mib")
        if used is not None and cap and used / cap >= gpu_full:
            v.add("problem", "gpu_memory_full", "GPU %s memory full: %.0f of %.0f MiB used (%.0f%%), utilization %s" % (
                gpu["index"], used, cap, 100 * used / cap, "%.0f%%" % gpu["util"] if gpu.get("util") is not None
                else "unknown"), gpu=gpu["index"], used_mib=used, total_mib=cap)


def all_rules(snap, now, since, window_text, gpu_full):
    v = Verdicts()
    readiness_rules(snap, v)
    worker_rules(snap, v, now)
    queue_rules(snap, v)
    kv_usage_rules(snap, v)
    counter_rules(snap, v, since, window_text)
    host_rules(snap, v, gpu_full)
    return v
