#!/usr/bin/env python3
"""Bursts of streamed chat requests at a gateway, some with X-Sluice-Queue-Updates: 1; for each of
those, what it was told while it waited against what happened (scripts/bench-queue-updates)."""
import argparse
import http.client
import json
import re
import statistics
import threading
import time
import urllib.parse

POSITION = re.compile(r"^: queue position=(\d+) eta_ms=(\d+)$")
WAITED = re.compile(r"^: queue wait_ms=(\d+)$")


def request(url, body, opted, out):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
    headers = {"Content-Type": "application/json"}
    if opted:
        headers["X-Sluice-Queue-Updates"] = "1"
    sent = time.monotonic()
    conn.request("POST", "/v1/chat/completions", body=body, headers=headers)
    resp = conn.getresponse()
    out["status"] = resp.status
    out["headers_s"] = time.monotonic() - sent
    out["queue_wait_header_ms"] = resp.getheader("X-Sluice-Queue-Wait-Ms")
    lines = []
    while True:
        raw = resp.readline()  # the chunked framing undone by http.client
        if not raw:
            break
        line = raw.decode("utf-8").rstrip("\n")
        lines.append((time.monotonic() - sent, line))
        if line == "data: [DONE]":
            break
    conn.close()
    out["lines"] = lines


def judge(c):
    """The opted-in client's positions, its wait, and the error of its first (and every) estimate."""
    positions = [(t, int(m.group(1)), int(m.group(2))) for t, l in c["lines"] for m in [POSITION.match(l)] if m]
    waited = [(t, int(m.group(1))) for t, l in c["lines"] for m in [WAITED.match(l)] if m]
    c.pop("lines")
    c["positions"] = [p for _, p, _ in positions]
    c["etas_ms"] = [e for _, _, e in positions]
    if not positions or not waited:
        c["ok"] = False
        return c
    dispatched_s = waited[0][0]
    c["wait_ms"] = waited[0][1]
    c["ok"] = (all(b <= a for a, b in zip(c["positions"], c["positions"][1:])) and c["positions"][-1] == 0
               and c["status"] == 200)
    errors = []
    for t, _, eta in positions:
        actual = (dispatched_s - t) * 1000
        if actual >= 200:  # the last reports, moments before dispatch, say little either way
            errors.append(abs(eta - actual) / actual)
    first_actual = (dispatched_s - positions[0][0]) * 1000
    c["first_eta_ms"] = positions[0][2]
    c["first_actual_ms"] = round(first_actual)
    c["first_error"] = abs(positions[0][2] - first_actual) / first_actual if first_actual > 0 else None
    c["errors"] = errors
    return c


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(p * len(s)))] if s else float("nan")


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--url", required=True)
    a.add_argument("--rounds", type=int, default=5)
    a.add_argument("--burst", type=int, default=24)
    a.add_argument("--every", type=int, default=4)
    a.add_argument("--prompt", type=int, default=2000)
    a.add_argument("--json")
    args = a.parse_args()
    clients = []
    for r in range(args.rounds):
        threads = []
        outs = []
        for i in range(args.burst):
            opted = i % args.every == args.every - 1
            body = json.dumps({"model": "sim-model", "max_tokens": 4, "stream": True, "messages": [
                {"role": "user", "content": "round %d request %d " % (r, i) + "abc " * args.prompt}]})
            out = {"round": r, "index": i, "opted": opted}
            outs.append(out)
            t = threading.Thread(target=request, args=(args.url, body, opted, out))
            t.start()
            threads.append(t)
            time.sleep(0.01)  # keep the arrival order
        for t in threads:
            t.join()
        for o in outs:
            if o["opted"]:
                clients.append(judge(o))
            elif o.get("queue_wait_header_ms") is None:
                raise SystemExit("a response without X-Sluice-Queue-Wait-Ms: %s" % o)
        time.sleep(1)
    bad = [c for c in clients if not c["ok"]]
    print("opted-in clients: %d (%d rounds of %d, every %d-th), positions non-increasing to 0 with a wait: %d"
          % (len(clients), args.rounds, args.burst, args.every, len(clients) - len(bad)))
    # a client that waited: its first estimate came >= 500 ms before its dispatch; the first round is
    # the cold start (no measured rate: the guess, initial_prefill_tokens_per_second)
    for label, rounds in (("all rounds", range(args.rounds)), ("round 1 (cold: the guessed rate)", [0]),
                          ("rounds 2-%d (the rate measured)" % args.rounds, range(1, args.rounds))):
        waited = [c for c in clients if c["round"] in rounds and c.get("first_actual_ms", 0) >= 500]
        firsts = [c["first_error"] for c in waited]
        every = [e for c in waited for e in c.get("errors", [])]
        if firsts:
            print("%s: %d clients that waited; first estimate error |eta - wait| / wait: p50 %.3f  p90 %.3f  "
                  "max %.3f; every estimate >= 200 ms before dispatch (%d): p50 %.3f  p90 %.3f"
                  % (label, len(waited), pct(firsts, 0.5), pct(firsts, 0.9), max(firsts), len(every),
                     pct(every, 0.5), pct(every, 0.9)))
    waits = [c["wait_ms"] for c in clients if "wait_ms" in c]
    if waits:
        print("waits of the opted-in clients: median %d ms, max %d ms" % (statistics.median(waits), max(waits)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(clients, f, indent=1)
    if bad:
        raise SystemExit("clients whose updates were wrong: %s" % bad[:3])


if __name__ == "__main__":
    main()
