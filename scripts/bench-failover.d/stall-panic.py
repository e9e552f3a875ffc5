#!/usr/bin/env python3
"""The client side of `scripts/bench-failover panic` (standard library only).

A 1P1D pair behind the gateway stalls silently (the simulator's kvStall: transfers hang, both
health checks pass). Measures, from outside: the request that finds the stall; then 30 sequential
and 30 concurrent clients (each a fresh connection), their status, latency, reason code and
Retry-After; the gateway's probes (its log's "stall probe sent" lines) and their spacing; whether
each Retry-After reached the next probe's start; and, healing the pair right after a probe starts
once the back-off is at its cap, the time until a client is served again.

usage: stall-panic.py GATEWAY ADMIN DECODE GATEWAY_LOG OUT_JSON
"""
import http.client
import json
import sys
import threading
import time
import urllib.parse
import urllib.request
from datetime import datetime

gateway, admin, decode, gateway_log, out = sys.argv[1:6]
BODY = json.dumps({"model": "sim-model", "max_tokens": 4, "stream": True,
                   "messages": [{"role": "user", "content": "hello there"}]}).encode()


def ask():
    """One client request on a fresh connection: (sent epoch s, seconds taken, status, code, retry_after)."""
    u = urllib.parse.urlparse(gateway)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    sent = time.time()
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", BODY, {"Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    took = time.perf_counter() - t0
    c.close()
    code = ""
    if r.status >= 400:
        try:
            code = json.loads(body)["error"]["code"]
        except (ValueError, KeyError):
            code = "?"
    ra = r.getheader("Retry-After")
    return {"sent": sent, "took_ms": took * 1000, "status": r.status, "code": code,
            "retry_after_s": int(ra) if ra else None}


def post(url, doc):
    req = urllib.request.Request(url, json.dumps(doc).encode(), {"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=5).read()


def decode_probe():
    state = json.load(urllib.request.urlopen(admin + "/admin/state", timeout=5))
    for w in state["workers"]:
        if w["role"] == "decode":
            return w.get("stall_probe")
    return None


def probe_starts():
    """Epoch seconds of every "stall probe sent" line in the gateway's log."""
    out = []
    for line in open(gateway_log):
        if "stall probe sent" in line:
            try:
                out.append(datetime.fromisoformat(line.split(" ", 1)[0]).timestamp())
            except ValueError:
                pass
    return out


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def burst(n):
    """n clients at once, each on a fresh connection."""
    got = [None] * n
    def one(i):
        got[i] = ask()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


res = {}
# warm-up: the first burst of new connections meets cold code paths in the gateway (and in this
# client); a burst of 30 served requests first, so that the refusals measure the refusal
warm = burst(30)
assert all(r["status"] == 200 for r in warm), warm
post(decode + "/sim/faults", {"kvStall": True})
first = ask()
res["first_request"] = first
verdict = time.time()
print(f"  the request that found the stall: {first['status']} after {first['took_ms'] / 1000:.1f} s")

sequential = [ask() for _ in range(30)]
concurrent = burst(30)
res["sequential"] = sequential
res["concurrent"] = concurrent

# heal right after a probe starts once the back-off is at its cap (4 failed: 1, 2, 4, 8, then 10 s)
deadline = time.time() + 120
while time.time() < deadline:
    p = decode_probe()
    if p and p["running"] and p["failed"] >= 4:
        break
    time.sleep(0.05)
healed = time.time()
post(decode + "/sim/faults", {"kvStall": False})
served = None
while time.time() < healed + 60:
    r = ask()
    if r["status"] == 200:
        served = r["sent"] + r["took_ms"] / 1000
        break
    time.sleep(0.1)
res["heal_to_served_s"] = None if served is None else served - healed

starts = [s for s in probe_starts() if s >= verdict - 1]
res["probe_starts_after_verdict_s"] = [round(s - verdict, 3) for s in starts]
res["probe_gaps_s"] = [round(b - a, 3) for a, b in zip(starts, starts[1:])]
short = 0
for r in sequential + concurrent:
    answered = r["sent"] + r["took_ms"] / 1000
    nxt = next((s for s in starts if s > answered), None)
    if nxt is not None and r["retry_after_s"] is not None and answered + r["retry_after_s"] < nxt:
        short += 1
res["retry_after_shorter_than_next_probe"] = short

for name, rs in (("sequential", sequential), ("concurrent", concurrent)):
    lat = [r["took_ms"] for r in rs]
    codes = sorted({f"{r['status']} {r['code']}" for r in rs})
    ras = sorted({r["retry_after_s"] for r in rs if r["retry_after_s"] is not None})
    res[name + "_summary"] = {"p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "max_ms": max(lat),
                              "answers": codes, "retry_after_s": ras}
    print(f"  30 {name}: {', '.join(codes)}; latency p50 {pct(lat, 50):.1f} ms, p99 {pct(lat, 99):.1f} ms, "
          f"max {max(lat):.1f} ms; Retry-After {ras} s")
print(f"  probes (s after the verdict): {res['probe_starts_after_verdict_s']}")
print(f"  probe gaps, start to start (s): {res['probe_gaps_s']}")
print(f"  refusals whose Retry-After fell short of the next probe: {short} of 60")
h = res["heal_to_served_s"]
print(f"  healed (right after a probe started at the cap) -> first client served: "
      f"{'never' if h is None else f'{h:.2f} s'}")
fast = all(r["status"] == 503 and r["code"] == "worker_suspect" and r["took_ms"] <= 50
           for r in sequential + concurrent)
capped = h is not None and h <= 10.0 + 0.5
res["goals"] = {"each_refusal_503_within_50ms": fast, "served_within_cap": capped}
print(f"{'PASS' if fast else 'FAIL'}: 30 sequential + 30 concurrent clients, each a 503 worker_suspect within 50 ms")
print(f"{'PASS' if capped else 'FAIL'}: the healed pair served again within the probe cap (10 s, +0.5 s for the "
      f"probe and the client's poll)")
json.dump(res, open(out, "w"), indent=2)
