"""How scripts/diagnose prints: the verdict lines first, then short evidence sections (text), or
one JSON document (--json)."""

import rules
import sources


def span(seconds):
    if seconds % 3600 == 0:
        return "%dh" % (seconds // 3600)
    if seconds % 60 == 0:
        return "%dm" % (seconds // 60)
    return "%gs" % seconds


def _n(value, fmt="%g"):
    return "-" if value is None else fmt % value


def _yes(flag):
    return "?" if flag is None else ("yes" if flag else "no")


def verdict_lines(verdicts):
    problems = verdicts.problems()
    notes = [v for v in verdicts.items if v["severity"] != "problem"]
    if problems:
        head = "VERDICT: %d problem%s" % (len(problems), "" if len(problems) == 1 else "s")
        if problems[0]["kind"] == "gateway_unreachable":
            head = "VERDICT: gateway unreachable"
    else:
        head = "VERDICT: all healthy"
    return [head] + ["  ! " + v["message"] for v in problems] + ["  - note: " + v["message"] for v in notes]


def as_text(snap, verdicts, code, now, args):
    out = verdict_lines(verdicts)
    out += ["", "EVIDENCE (%s)" % now.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")]
    out += _services(snap)
    out += _gateway(snap)
    out += _workers(snap)
    out += _recent_errors(snap, args)
    out += _gpus(snap)
    out += _logs(snap, args)
    out.append("(exit %d)" % code)
    return "\n".join(out)


def _services(snap):
    s = snap["services"]
    out = ["-- services (systemd)"]
    if not s.get("available"):
        return out + ["  " + s.get("note", "")]
    for u in s["units"]:
        if u.get("LoadState") != "loaded":
            out.append("  %-16s %s" % (u["unit"], u.get("error") or "not installed"))
        else:
            out.append("  %-16s %s (%s), %s, since %s, restarts %s" % (
                u["unit"], u.get("ActiveState"), u.get("SubState"), u.get("UnitFileState"),
                u.get("StateChangeTimestamp") or "-", u.get("NRestarts") or 0))
    return out


def _gateway(snap):
    out = ["-- gateway (admin %s)" % snap["admin_url"]]
    st = snap.get("state")
    if st is None:
        out.append("  /admin/state: %s" % snap.get("state_error"))
    else:
        cfg = st.get("config") or {}
        out.append("  ready %s, draining %s, live requests %s, config %s (hash %s)" % (
            _yes(st.get("ready")), _yes(st.get("draining")), st.get("live_requests"), cfg.get("file", "-"), cfg.get("hash", "-")))
        q, lim = st.get("queue", {}), st.get("limits", {})
        out.append("  queue %s/%s requests, %s/%s pending prompt tokens (%s in prefill), drain %s tokens/s%s" % (
            q.get("queued"), lim.get("max_queued_requests"), q.get("pending_tokens"), lim.get("max_pending_tokens"),
            q.get("inflight_prefill_tokens"), q.get("prefill_tokens_per_second"),
            "" if q.get("throughput_measured") else " (estimated)"))
    r = snap["readiness"]
    out.append("  %s (%s): %s" % (r["url"], snap["gateway_url_source"], r["error"] if r["status"] is None else "%d %s" % (
        r["status"], (r["body"] or {}).get("status", "") if isinstance(r["body"], dict) else "")))
    m0, m1 = snap.get("metrics0"), snap.get("metrics1")
    if m0 is None:
        if snap.get("metrics_error"):
            out.append("  admin /metrics: %s" % snap["metrics_error"])
        return out
    parts = []
    for title, name, label in (("requests", "sluice_requests_total", "outcome"),
                               ("rejections", "sluice_rejections_total", "reason"),
                               ("aborts", "sluice_aborts_total", "cause"),
                               ("retries", "sluice_retries_total", "reason"),
                               ("KV transfer failures", "sluice_kv_transfer_failures_total", "worker"),
                               ("ejections", "sluice_worker_ejections_total", "reason")):
        now_ = sources.by_label(m1 or m0, name, label)
        total = sum(now_.values())
        text = "%s %d" % (title, total)
        if m1:
            inc = rules._deltas(m0, m1, name, label)
            text += " (+%d%s)" % (sum(inc.values()), ": " + rules._fmt(inc) if inc else "")
        parts.append(text)
    window = (" (since the gateway started; +N: in the last %.1f s)" % snap["sample_seconds"]
              if m1 else " (since the gateway started)")
    out.append("  counters%s:" % window)
    out.append("    " + ", ".join(parts))
    return out


def _workers(snap):
    out = ["-- workers (state from the gateway; health, load and metrics read from here)"]
    if not snap["workers"]:
        return out + ["  none known"]
    out.append("  %-8s %-22s %-9s %-6s %-5s %-7s %-5s %-5s %-6s %s" % (
        "ROLE", "WORKER", "STATE", "SINCE", "INFL", "HEALTH", "QUEUE", "RUN", "KV", "LOAD (reqs/waiting)"))
    for w in snap["workers"]:
        p, c = w.get("probe", {}), w.get("current", {})
        since = rules.parse_instant(w.get("state_since"))
        health = p.get("health", {})
        load = (p.get("get_load") or {}).get("body")
        if isinstance(load, list):
            load_text = "%d/%d" % (sum(x.get("num_reqs", 0) for x in load), sum(x.get("num_waiting_reqs", 0)
                                                                               for x in load))
        elif isinstance(load, dict):
            load_text = "%s/%s" % (load.get("num_reqs", "?"), load.get("num_waiting_reqs", "?"))
        else:
            load_text = rules.short((p.get("get_load") or {}).get("error") or "status %s" % (p.get("get_load") or {})
                                    .get("status"), 40)
        out.append("  %-8s %-22s %-9s %-6s %-5s %-7s %-5s %-5s %-6s %s" % (
            w["role"], w["worker"], w.get("state", "?"), since.astimezone().strftime("%H:%M") if since else "-",
            w.get("inflight", "-"), health.get("status") or "down", _n(c.get("queue"), "%d"),
            _n(c.get("running"), "%d"), _n(c.get("token_usage"), "%.2f"), load_text))
        keys = {"prefill": ("bootstrap_queue", "kv_inflight_queue"),
                "decode": ("gen_throughput", "decode_prealloc_queue", "decode_transfer_queue")}.get(
            w["role"], ("gen_throughput",)) + ("transfer_failed", "bootstrap_failed", "aborted")
        extra = ["%s %s" % (k.replace("_", " "), _n(c[k], "%.4g")) for k in keys if k in c]
        out.append("      metrics (%s): %s" % (c.get("source"), ", ".join(extra) or "-"))
        if p.get("metrics_error"):
            out.append("      /metrics: %s" % p["metrics_error"])
        if health.get("error"):
            out.append("      /health: %s" % health["error"])
        if w.get("state_reason"):
            out.append("      reason: %s" % rules.short(w["state_reason"], 300))
    return out


def _recent_errors(snap, args):
    errors = (snap.get("state") or {}).get("recent_errors", [])
    cutoff = snap["since"]
    recent = [(rules.parse_instant(e.get("at")), e) for e in errors]
    recent = [(t, e) for t, e in recent if t is not None and t >= cutoff]
    out = ["-- recent errors (failed or rejected requests in the last %s: %d of the %d the gateway kept; newest first)"
           % (span(args.since), len(recent), len(errors))]
    if not recent:
        return out + ["  none"]
    for t, e in recent[: args.lines]:
        out.append("  %s %s %-15s %-16s rid=%s %s" % (t.astimezone().strftime("%H:%M:%S"), e.get("status"),
                                                     e.get("outcome"), e.get("route"), e.get("rid"),
                                                     rules.short(e.get("detail"), 120)))
    if len(recent) > args.lines:
        out.append("  ... %d more" % (len(recent) - args.lines))
    return out


def _gpus(snap):
    g = snap["gpus"]
    out = ["-- GPUs (nvidia-smi)"]
    if not g.get("available"):
        return out + ["  " + g.get("note", "")]
    if g.get("error"):
        return out + ["  " + g["error"]]
    for gpu in g["gpus"]:
        used, cap = gpu.get("used_mib"), gpu.get("total_mib")
        share = " (%.0f%%)" % (100 * used / cap) if used is not None and cap else ""
        out.append("  GPU %s: %s of %s MiB%s, utilization %s" % (gpu["index"], _n(used, "%.0f"), _n(cap, "%.0f"),
                                                                share, _n(gpu.get("util"), "%.0f%%")))
    return out


def _logs(snap, args):
    out = ["-- logs (error lines, last %s)" % span(args.since)]
    sections = [("journal", snap["journal_note"], snap["journal_lines"])]
    sections += [(lg["path"], lg["note"], lg["lines"]) for lg in snap["logs"]]
    for name, note, lines in sections:
        errors = [x for x in lines if sources.ERROR_LINE.search(x)]
        if name == "journal" and not lines and note and not note.startswith("journalctl -u"):
            out.append("  journal: %s" % note)
            continue
        out.append("  %s: %d of %d lines%s" % (name, len(errors), len(lines), ("; " + note) if note else ""))
        out += ["    " + rules.short(x, 220) for x in errors[-args.lines:]]
    if not snap["logs"]:
        out.append("  (no --log FILE given)")
    return out


def as_json(snap, verdicts, code, now, args):
    workers = []
    for w in snap["workers"]:
        p = w.get("probe", {})
        workers.append({k: w.get(k) for k in ("role", "worker", "url", "state", "state_reason", "state_since",
                                              "usable", "inflight")}
                       | {"health": p.get("health"), "get_load": (p.get("get_load") or {}).get("body"),
                          "metrics": w.get("current"), "metrics_error": p.get("metrics_error")})
    return {
        "time": now.isoformat(),
        "status": {0: "healthy", 1: "problems", 2: "unreachable"}[code],
        "exit_code": code,
        "verdict": [v["message"] for v in verdicts.problems()]
                   + [v["message"] for v in verdicts.items if v["severity"] != "problem"],
        "verdicts": verdicts.items,
        "evidence": {
            "admin": args.admin,
            "gateway": snap["gateway_url"],
            "state": {k: v for k, v in (snap.get("state") or {}).items() if k != "workers"} or None,
            "state_error": snap.get("state_error"),
            "readiness": {k: snap["readiness"][k] for k in ("url", "status", "error", "body")},
            "sample_seconds": snap.get("sample_seconds"),
            "kv_threshold": {"value": snap["kv_threshold"][0], "source": snap["kv_threshold"][1]},
            "workers": workers,
            "services": snap["services"],
            "gpus": snap["gpus"],
            "journal": {"note": snap["journal_note"],
                        "error_lines": [x for x in snap["journal_lines"] if sources.ERROR_LINE.search(x)][-args.lines:]},
            "logs": [{"path": lg["path"], "note": lg["note"],
                      "error_lines": [x for x in lg["lines"] if sources.ERROR_LINE.search(x)][-args.lines:]}
                     for lg in snap["logs"]],
        },
    }
