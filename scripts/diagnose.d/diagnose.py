"""scripts/diagnose: for a stuck cluster, a short verdict first, then the evidence.
Standard library only (python3 >= 3.9). See `scripts/diagnose --help` and docs/operations.md."""

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402
import rules  # noqa: E402
import sources  # noqa: E402

DEFAULT_UNITS = "sluice-gateway,sglang-prefill,sglang-decode,vllm-prefill,vllm-decode"
EXIT_HEALTHY, EXIT_PROBLEMS, EXIT_UNREACHABLE = 0, 1, 2


def duration(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError("%r (expected: a duration like 500ms, 3s, 5m, 1h)" % text)
    scale = {"ms": 0.001, "s": 1, None: 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    return float(m.group(1)) * scale


def options(argv):
    p = argparse.ArgumentParser(prog="scripts/diagnose", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog="""\
Exit status: 0 all healthy, 1 problems found (the verdict lines), 2 gateway unreachable.
Worker URLs come from the gateway's /admin/state. Environment: NVIDIA_SMI (default nvidia-smi).""")
    p.add_argument("--admin", default="http://127.0.0.1:8081", help="the gateway's admin listener (default: %(default)s)")
    p.add_argument("--gateway", help="the gateway's client listener, for /readiness (default: the listen: address of "
                   "the config file /admin/state names, on the admin host; else port 8080)")
    p.add_argument("--log", action="append", default=[], metavar="FILE",
                   help="a log file to read error lines from (repeatable)")
    p.add_argument("--since", type=duration, default=300, metavar="DURATION",
                   help="how far back to look in recent errors and logs (default: 5m)")
    p.add_argument("--sample", "--interval", type=duration, default=3, metavar="DURATION",
                   help="time between the two readings of the counters (default: 3s; 0: one reading)")
    p.add_argument("--timeout", type=duration, default=3, metavar="DURATION", help="per HTTP call (default: 3s)")
    p.add_argument("--units", default=DEFAULT_UNITS, help="systemd units to check, comma-separated; 'none' to skip "
                   "(default: %(default)s)")
    p.add_argument("--kv-threshold", type=float, help="decode KV usage counted as full (default: "
                   "health.decode_max_kv_usage from the config file, else 0.98)")
    p.add_argument("--gpu-full", type=float, default=0.98, help="GPU memory share counted as full (default: 0.98)")
    p.add_argument("--lines", type=int, default=10, help="error lines shown per log source (default: 10)")
    p.add_argument("--json", action="store_true", help="one JSON document: verdicts and evidence")
    a = p.parse_args(argv)
    a.admin = a.admin.rstrip("/")
    a.units = [] if a.units.strip() in ("", "none") else [u.strip() for u in a.units.split(",") if u.strip()]
    return a


# ---------------------------------------------------------------- the gateway's config file (when readable)

def config_text(state):
    path = ((state or {}).get("config") or {}).get("file")
    if not path:
        return None, None
    try:
        with open(path, encoding="utf-8") as f:
            return path, f.read()
    except OSError:
        return path, None


def yaml_scalar(text, section, key):
    """`key` under the top-level `section` of a YAML file, block or flow style; a small reader for two
    keys, not a YAML parser (the standard library has none)."""
    m = re.search(r"(?m)^%s:([^\n]*(?:\n(?:[ \t][^\n]*)?)*)" % re.escape(section), text)
    if not m:
        return None
    body = re.sub(r"#.*", "", m.group(1))
    k = re.search(r"(?:^|[\s{,])%s:\s*([^\s,}]+)" % re.escape(key), body)
    return k.group(1).strip("'\"") if k else None


def gateway_url(args, state, admin_host):
    if args.gateway:
        return args.gateway.rstrip("/"), "--gateway"
    path, text = config_text(state)
    if text:
        port = yaml_scalar(text, "listen", "port")
        host = yaml_scalar(text, "listen", "host") or "0.0.0.0"
        if port and port != "0":
            if host in ("0.0.0.0", "::", "[::]"):
                host = admin_host
            return "http://%s:%s" % (host, port), "listen: in %s" % path
    return "http://%s:8080" % admin_host, "guessed: pass --gateway"


def kv_threshold(args, state):
    if args.kv_threshold is not None:
        return args.kv_threshold, "--kv-threshold"
    path, text = config_text(state)
    value = yaml_scalar(text, "health", "decode_max_kv_usage") if text else None
    try:
        return float(value), "health.decode_max_kv_usage in %s" % path
    except (TypeError, ValueError):
        return 0.98, "health.decode_max_kv_usage default"


# ---------------------------------------------------------------- collection

def scrape(url, timeout):
    status, body, error = sources.http_get(url, timeout)
    if status is None or status >= 400:
        return None, error or "status %d" % status
    return sources.parse_prometheus(body), None


def probe_worker(w, timeout):
    base = w["url"].rstrip("/")
    p = {}
    status, _, error = sources.http_get(base + "/health", timeout)
    p["health"] = {"status": status, "error": error}
    status, load, error = sources.http_json(base + "/get_load", timeout)
    p["get_load"] = {"status": status, "body": load, "error": error}
    p["metrics0"], p["metrics_error"] = scrape(base + "/metrics", timeout)
    return p


def collect(args, now):
    snap = {"admin_url": args.admin, "workers": [], "notes": []}
    admin_host = urllib.parse.urlsplit(args.admin).hostname or "127.0.0.1"
    status, state, error = sources.http_json(args.admin + "/admin/state", args.timeout)
    if status != 200 or not isinstance(state, dict):
        snap["state_error"] = error or "status %s" % status
        state = None
    snap["state"] = state
    snap["gateway_url"], snap["gateway_url_source"] = gateway_url(args, state, admin_host)
    r_status, r_body, r_error = sources.http_json(snap["gateway_url"] + "/readiness", args.timeout)
    snap["readiness"] = {"url": snap["gateway_url"] + "/readiness", "status": r_status, "error": r_error,
                         "body": r_body,
                         "ready": (r_body or {}).get("status") == "ready" if isinstance(r_body, dict) else None}
    if state is not None:
        snap["workers"] = [dict(w) for w in state.get("workers", [])]
    elif isinstance(r_body, dict):  # admin down, gateway up: the readiness answer lists the workers too
        snap["workers"] = [dict(w, worker=urllib.parse.urlsplit(w["url"]).netloc, state_reason=w.get("reason"))
                           for w in r_body.get("workers")
                           or [w for p in r_body.get("pools", []) for w in p.get("workers", [])]]  # with pools:
    snap["kv_threshold"] = kv_threshold(args, state)
    path, text = config_text(state)
    try:
        snap["recent_capacity"] = int(yaml_scalar(text, "admin", "recent_errors") or 50) if text else 50
    except ValueError:
        snap["recent_capacity"] = 50
    reachable = state is not None or r_status is not None
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        host = {
            "services": pool.submit(sources.services, args.units),
            "gpus": pool.submit(sources.gpus, os.environ.get("NVIDIA_SMI", "nvidia-smi")),
            "journal": pool.submit(sources.journal, args.units, now - datetime.timedelta(seconds=args.since)),
        }
        if reachable:
            admin_metrics = pool.submit(scrape, args.admin + "/metrics", args.timeout)
            probes = [pool.submit(probe_worker, w, args.timeout) for w in snap["workers"]]
            snap["metrics0"], snap["metrics_error"] = admin_metrics.result()
            for w, f in zip(snap["workers"], probes):
                w["probe"] = f.result()
            if args.sample > 0:
                time.sleep(max(0.0, args.sample - (time.monotonic() - t0)))
                t1 = time.monotonic()
                again = [pool.submit(scrape, w["url"].rstrip("/") + "/metrics", args.timeout) for w in snap["workers"]]
                snap["metrics1"], _ = scrape(args.admin + "/metrics", args.timeout)
                for w, f in zip(snap["workers"], again):
                    w["probe"]["metrics1"] = f.result()[0]
                snap["sample_seconds"] = round(t1 - t0, 1)
        for key, f in host.items():
            snap[key] = f.result()
    journal_lines, snap["journal_note"] = snap.pop("journal")
    snap["journal_lines"] = journal_lines
    snap["logs"] = []
    since = snap["since"] = now - datetime.timedelta(seconds=args.since)
    for path in args.log:
        lines, note = sources.log_file(path, since)
        snap["logs"].append({"path": path, "lines": lines, "note": note})
    snap["log_lines_all"] = journal_lines + [x for lg in snap["logs"] for x in lg["lines"]]
    for w in snap["workers"]:
        w["current"] = current_numbers(w)
    return snap, reachable


def current_numbers(w):
    """The worker's numbers: its own /metrics when readable from here, else the gateway's telemetry."""
    p = w.get("probe", {})
    samples = p.get("metrics1") or p.get("metrics0")
    out = {}
    for key, _, _ in rules.WORKER_METRICS:
        value = rules.worker_metric(samples, key) if samples else None
        if value is None and key in rules.TELEMETRY:
            value = (w.get("telemetry") or {}).get(rules.TELEMETRY[key])
        if value is not None:
            out[key] = value
    out["source"] = "worker /metrics" if samples else ("gateway telemetry" if w.get("telemetry") else "none")
    return out


def main(argv):
    args = options(argv)
    now = datetime.datetime.now(datetime.timezone.utc)
    snap, reachable = collect(args, now)
    window = report.span(args.since)
    if not reachable:
        verdicts = rules.Verdicts()
        verdicts.add("problem", "gateway_unreachable", "gateway unreachable: admin %s/admin/state: %s; %s: %s" % (
            args.admin, snap.get("state_error"), snap["readiness"]["url"], snap["readiness"]["error"]
            or "status %s" % snap["readiness"]["status"]))
        rules.host_rules(snap, verdicts, args.gpu_full)
        code = EXIT_UNREACHABLE
    else:
        verdicts = rules.all_rules(snap, now, now - datetime.timedelta(seconds=args.since), window, args.gpu_full)
        if snap["state"] is None:
            verdicts.items.insert(0, {"severity": "problem", "kind": "admin_unreachable", "message":
                                      "admin listener %s unreachable (%s): verdicts from /readiness only"
                                      % (args.admin, snap.get("state_error"))})
        code = EXIT_PROBLEMS if verdicts.problems() else EXIT_HEALTHY
    try:
        if args.json:
            print(json.dumps(report.as_json(snap, verdicts, code, now, args), indent=2, default=str))
        else:
            print(report.as_text(snap, verdicts, code, now, args))
        sys.stdout.flush()
    except BrokenPipeError:  # scripts/diagnose | head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return code


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
