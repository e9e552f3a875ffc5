#!/usr/bin/env python3
"""Warm a Java server until its JIT compilers are quiet (standard library only).

A throughput benchmark measures the JIT's steady state; JMH warms up for the same reason. A fixed
warm-up is not enough on this machine's layout: the server is pinned to one CPU, so its C1 and C2
compiler threads take their CPU from the core the event loop needs, and a configuration with more
code on the request path (tracing: the span calls, the encoder) keeps compiling longer than one
without. Measured with tracing at 100 %, 10 s into the warm-up the compiler threads still took 4.6 s
of the next 12 s (3.0 s with tracing off); a run measured then reads the compiler, not the gateway.

So, after the fixed warm-up, chunks of load run until the compiler threads (the tasks named
"C1 CompilerThre..." and "C2 CompilerThre..." in /proc/PID/task, their utime + stime) took less
than --quiet % of one core over each of two chunks in a row, or --max seconds have passed; every Java target of a run
gets the same rule. Prints one line per chunk (the compilers' share of the core) and, as a module,
returns what it saw so that the run's record keeps it.

  jit_quiet.py --pid PID --url URL --conns 64 [--chunk 5 --quiet 2 --max 90] --body F --lua F
"""
import argparse
import json
import os
import subprocess
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def compiler_jiffies(pid):
    """utime + stime of the JVM's JIT compiler threads (HotSpot names them C1/C2 CompilerThreadN)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        if comm.startswith("C1 Compiler") or comm.startswith("C2 Compiler"):
            rest = s[s.rindex(")") + 2:].split()
            total += int(rest[11]) + int(rest[12])
    return total


def warm_until_quiet(pid, run_chunk, label, chunk_s=5, quiet_percent=2.0, max_s=90, gate=None):
    """Calls run_chunk(seconds) until the compilers took < quiet_percent of a core over two chunks in a row
    (gate(), if given, runs before each chunk, outside its timing: the quiet gate of bench-proxy)."""
    shares, spent = [], 0.0
    while True:
        if gate:
            gate()
        before, t0 = compiler_jiffies(pid), time.monotonic()
        run_chunk(chunk_s)
        wall = time.monotonic() - t0
        share = 100.0 * (compiler_jiffies(pid) - before) / HZ / wall
        shares.append(round(share, 1))
        spent += wall
        # two quiet chunks in a row: tiered compilation comes in waves, one quiet chunk can be a lull between two
        quiet = len(shares) >= 2 and shares[-1] < quiet_percent and shares[-2] < quiet_percent
        print(f"warm-up {label:14s} {chunk_s:4d} s: JIT compilers {share:5.1f} % of a core"
              + (" (quiet)" if quiet else " (not quiet after %.0f s: measured anyway)" % spent if spent >= max_s else ""),
              flush=True)
        if quiet or spent >= max_s:
            return {"jit_quiet": quiet, "jit_warmup_s": round(spent, 1), "jit_percent_per_chunk": shares}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--chunk", type=int, default=5, help="seconds of load per chunk")
    ap.add_argument("--quiet", type=float, default=2.0, help="%% of one core the compilers may take in a quiet chunk")
    ap.add_argument("--max", type=float, default=90.0, help="seconds of chunks at most")
    ap.add_argument("--body", required=True)
    ap.add_argument("--lua", required=True)
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--label", default="server")
    a = ap.parse_args()
    env = dict(os.environ, BENCH_BODY=a.body)

    def chunk(seconds):
        subprocess.run(["taskset", "-c", a.client_cpu, "wrk", "-t1", f"-c{a.conns}", f"-d{seconds}s", "-s", a.lua,
                        a.url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)

    json.dump({"label": a.label, **warm_until_quiet(a.pid, chunk, a.label, a.chunk, a.quiet, a.max)}, sys.stderr)
    sys.stderr.write("\n")


if __name__ == "__main__":
    main()
