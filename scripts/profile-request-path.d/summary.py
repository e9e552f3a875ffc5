"""Summary of scripts/profile-request-path: medians over rounds per mode, jar and connection count,
the current/baseline ratios, and (when profiled) the event loop's top frames."""
import collections, json, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from breakdown import breakdown  # noqa: E402

run = sys.argv[1]
rows = [json.loads(l) for l in open(os.path.join(run, "results.jsonl"))]
by = collections.defaultdict(list)
for r in rows:
    by[(r["mode"], r["conns"], r["jar"])].append(r)
print(f"{'mode':7} {'conns':>5} {'jar':9} {'cpu us/req':>10} {'req/s':>9} {'p50 us':>7} {'p99 us':>7}  (medians of {max(r['round'] for r in rows)} rounds)")
med = {}
for (mode, c, jar), rs in sorted(by.items()):
    m = {k: statistics.median(r[k] for r in rs) for k in ("cpu_us_per_request", "rps", "p50_us", "p99_us")}
    med[(mode, c, jar)] = m
    print(f"{mode:7} {c:>5} {jar:9} {m['cpu_us_per_request']:>10.1f} {m['rps']:>9.0f} {m['p50_us']:>7.0f} {m['p99_us']:>7.0f}")
print()
for (mode, c, jar), m in sorted(med.items()):
    if jar == "current" and (mode, c, "baseline") in med:
        b = med[(mode, c, "baseline")]
        print(f"{mode} at {c} connections: CPU per request current/baseline {m['cpu_us_per_request'] / b['cpu_us_per_request']:.2f}x, "
              f"req/s {m['rps'] / b['rps']:.2f}x, p50 {m['p50_us'] / b['p50_us']:.2f}x")
for f in sorted(os.listdir(run)):
    if not f.startswith("profile-") or not f.endswith(".collapsed"):
        continue
    total = 0
    leaf = collections.Counter()
    kernel = 0
    for line in open(os.path.join(run, f)):
        stack, n = line.rsplit(" ", 1)
        frames = stack.split(";")
        if not any("SingleThreadIoEventLoop.run" in x for x in frames):
            continue
        n = int(n)
        total += n
        java = [x for x in frames if "/" in x and not x.endswith("_[k]")]
        leaf[java[-1] if java else frames[-1]] += n
        kernel += n if frames[-1].endswith("_[k]") else 0
    if total:
        print(f"\n{f}: event loop samples {total}, in the kernel {100 * kernel / total:.0f}%; top Java frames (self, incl. the syscalls below them):")
        for k, v in leaf.most_common(12):
            print(f"  {100 * v / total:5.1f}% {k}")
for f in sorted(os.listdir(run)):
    if not f.startswith("alloc-") or not f.endswith(".collapsed"):
        continue
    mode = f[len("alloc-"):-len(".collapsed")]
    requests = json.load(open(os.path.join(run, f"alloc-{mode}.requests.json")))["requests"]
    total = 0
    by_frame = collections.Counter()
    for line in open(os.path.join(run, f)):
        stack, n = line.rsplit(" ", 1)
        n = int(n)
        total += n
        ours = [x for x in stack.split(";") if x.startswith("dev/sluice/")]
        by_frame[ours[-1] if ours else "(outside the gateway's code)"] += n
    if total and requests:
        print(f"\n{f}: {total / requests:.0f} bytes allocated per request ({requests} requests at 16 connections); "
              "by the innermost gateway frame:")
        for k, v in by_frame.most_common(12):
            print(f"  {100 * v / total:5.1f}% {k}")
for f in sorted(os.listdir(run)):
    if f.startswith("profile-") and f.endswith(".requests.json"):
        print()
        print(breakdown(run, f[len("profile-"):-len(".requests.json")]))
