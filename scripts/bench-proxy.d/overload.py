#!/usr/bin/env python3
"""Open-loop load for the rejection case of scripts/bench-proxy (standard library only).

Sends the request body at a fixed rate (one request every 1/rate s, on time whatever the answers
do: an overload is offered, not negotiated) over pre-opened keep-alive HTTP/1.1 connections, raw
non-blocking sockets, and measures each answer's latency from the request's send to the last byte
of its body, by status. wrk cannot do this: it paces by answers (closed loop) and does not split
latency by status. The loop spins (no sleeping, no event loop wake-ups) so that the client adds
microseconds, not the idle CPU's wake-up latency: run it on a core of its own.

  overload.py --url http://127.0.0.1:18146/v1/chat/completions --rate 100 --duration 20 --body request.json

Prints one JSON object: sent, answered, by status (count, p50/p90/p99/max in microseconds),
errors, and how late the sender was.
"""
import argparse
import json
import selectors
import socket
import sys
import time
from urllib.parse import urlsplit


def percentile(sorted_values, p):
    """Nearest-rank percentile."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, -(-len(sorted_values) * p // 100) - 1))
    return sorted_values[int(k)]


class Conn:
    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.start = None
        self.buf = b""

    def parse(self):
        """(status, keep_alive) once a whole answer is in the buffer, else None."""
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = self.buf[:end].decode("latin-1").split("\r\n")
        length, close = 0, False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "connection" and value.strip().lower() == "close":
                close = True
        if len(self.buf) < end + 4 + length:
            return None
        self.buf = self.buf[end + 4 + length:]
        return int(lines[0].split(" ", 2)[1]), not close


def run(args):
    url = urlsplit(args.url)
    host, port = url.hostname, url.port or 80
    body = open(args.body, "rb").read()
    request = (f"POST {url.path or '/'} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode("ascii") + body
    sel = selectors.DefaultSelector()
    idle = []
    opened = 0

    def new_conn():
        nonlocal opened
        c = Conn(host, port)
        sel.register(c.sock, selectors.EVENT_READ, c)
        opened += 1
        return c

    for _ in range(args.connections):
        idle.append(new_conn())
    latencies, errors, lag = {}, {}, []
    trace = [] if args.trace else None
    busy = set()
    n = int(args.rate * args.duration)
    interval = int(1e9 / args.rate)
    t0 = time.perf_counter_ns()
    sent = 0
    deadline = t0 + int((args.duration + args.timeout) * 1e9)
    while sent < n or busy:
        now = time.perf_counter_ns()
        if now > deadline:
            errors["timeout"] = errors.get("timeout", 0) + len(busy)
            break
        if sent < n and now >= t0 + sent * interval:
            c = idle.pop() if idle else new_conn()  # all busy: a new connection (its connect untimed)
            lag.append((time.perf_counter_ns() - (t0 + sent * interval)) / 1000)
            c.start = time.perf_counter_ns()
            c.sock.send(request)  # a few hundred bytes: fits an empty socket buffer at once
            busy.add(c)
            sent += 1
        for key, _ in sel.select(0):
            c = key.data
            try:
                data = c.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as e:
                data, errors[type(e).__name__] = b"", errors.get(type(e).__name__, 0) + 1
            if not data:  # closed by the server
                sel.unregister(c.sock)
                c.sock.close()
                if c in busy:
                    busy.discard(c)
                    errors["closed"] = errors.get("closed", 0) + 1
                elif c in idle:
                    idle.remove(c)
                continue
            c.buf += data
            answer = c.parse()
            if answer is None:
                continue
            status, keep = answer
            latency = (time.perf_counter_ns() - c.start) // 1000
            latencies.setdefault(status, []).append(latency)
            if trace is not None:
                trace.append(((c.start - t0) // 1000, status, latency))
            busy.discard(c)
            if keep:
                idle.append(c)
            else:
                sel.unregister(c.sock)
                c.sock.close()
    for key in list(sel.get_map().values()):
        key.fileobj.close()
    if trace is not None:
        with open(args.trace, "w") as f:
            f.write("sent_at_us status latency_us\n")
            f.writelines(f"{t} {s} {l}\n" for t, s, l in trace)
    lag.sort()
    by_status = {}
    for status, values in sorted(latencies.items()):
        values.sort()
        by_status[str(status)] = {"count": len(values), "p50_us": percentile(values, 50),
                                  "p90_us": percentile(values, 90), "p99_us": percentile(values, 99),
                                  "max_us": values[-1]}
    return {"url": args.url, "rate": args.rate, "duration_s": args.duration, "sent": sent,
            "answered": sum(len(v) for v in latencies.values()), "by_status": by_status, "errors": errors,
            "connections_opened": opened,
            "send_lag_us": {"p50": percentile(lag, 50), "p99": percentile(lag, 99), "max": lag[-1] if lag else None}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--rate", type=float, required=True, help="requests per second")
    ap.add_argument("--duration", type=float, required=True, help="seconds")
    ap.add_argument("--body", required=True, help="file with the request body (JSON)")
    ap.add_argument("--connections", type=int, default=16, help="keep-alive connections opened before the run")
    ap.add_argument("--trace", help="also write every answer (sent at, status, latency in us) to this file")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds the last answers may take")
    args = ap.parse_args()
    json.dump(run(args), sys.stdout)
    print()


if __name__ == "__main__":
    main()
