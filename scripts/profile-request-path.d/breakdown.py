#!/usr/bin/env python3
"""Where a profiled gateway's CPU went, in µs a request: scripts/profile-request-path's CPU profile
(profile-<mode>.collapsed, async-profiler at 1 ms: one sample is 1 ms of CPU) divided by the requests
of the profiled run (profile-<mode>.requests.json). By thread (event loop, tracing's export thread,
log writer, JIT, GC, other) and, on the event loop, tracing's own frames (spans encoded as they end;
recording spans; the request's log line and end-of-request metrics; exemplars). Compare a traced
run (TRACE=1) with an untraced one to read what tracing costs a request.

  breakdown.py RUN_DIR [MODE]     MODE: none (default) or sglang
"""
import collections, json, os, sys


def thread_of(frames):
    if any("SingleThreadIoEventLoop.run" in f for f in frames):
        return "event loop"
    if any("ExportThread" in f for f in frames):
        return "tracing export thread"
    if any("BatchingConsoleAppender" in f for f in frames):
        return "log writer"
    if any("Compile" in f or "C2" in f or "C1" in f for f in frames):
        return "JIT"
    if any("GC" in f or "G1" in f for f in frames):
        return "GC"
    return "other"


def loop_part(names):
    def has(s):
        return any(s in n for n in names)
    if has("RequestLog") or has("PdExchange$$Lambda"):
        return "log line + end-of-request metrics"
    if has("EncodedSpanExport.add"):
        return "tracing: spans encoded as they end"
    if has("RequestTrace.") or has("RecordedSpan") or has("TraceRoot") or has("Tracing.") or has("TraceIds"):
        return "tracing: recording spans, ids, traceparent"
    if has("updateExemplar") or has("Exemplar"):
        return "exemplars"
    return None


def breakdown(run, mode="none"):
    requests = json.load(open(os.path.join(run, f"profile-{mode}.requests.json")))["requests"]
    threads, parts = collections.Counter(), collections.Counter()
    for line in open(os.path.join(run, f"profile-{mode}.collapsed")):
        stack, n = line.rsplit(" ", 1)
        frames = stack.split(";")
        t = thread_of(frames)
        threads[t] += int(n)
        if t == "event loop":
            p = loop_part([f.split("/")[-1] for f in frames])
            if p:
                parts[p] += int(n)
    us = 1000.0 / requests  # 1 ms a sample
    lines = [f"profile-{mode}: {requests} requests profiled, {sum(threads.values()) * us:.2f} µs of CPU a request"]
    lines += [f"  {v * us:6.2f} µs  {k}" for k, v in threads.most_common()]
    lines += ["  on the event loop:"] + [f"  {v * us:6.2f} µs    {k}" for k, v in parts.most_common()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(breakdown(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "none"))
