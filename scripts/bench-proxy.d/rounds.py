#!/usr/bin/env python3
"""The measuring loop of scripts/bench-proxy (standard library only).

For each round, for each connection count, every target once, in an order rotated by one each
round, so that drift (JIT, a neighbour's load, thermal) hits all targets alike. Each run is wrk
(one thread, pinned to the client CPU, keep-alive, the POST of post.lua); around it the CPU time of
the whole machine (/proc/stat), of the servers (/proc/PID/stat of every listed pid and its children)
and of wrk (rusage) is read, so that CPU used by anything else during the run ("foreign", in % of
one core) is recorded with the result. Before each run, a quiet gate waits (up to --quiet-wait s)
until foreign load is below --quiet-max % of a core: this machine may be shared. A run during which
foreign load passed --max-foreign is run again (up to --retries times; the least disturbed attempt
is kept and flagged "noisy" if it still passed). The same for the hypervisor's steal (/proc/stat): the
gate also waits for it to be under --max-steal % of a core, and a run during which it passed that is run
again and flagged alike.

Writes one JSON line per run to runs.jsonl in --run-dir (raw wrk output in raw/) and prints a line
per run.

  rounds.py --exec-json OUT --pids-file F [gate options] -- COMMAND...
runs one command that prints JSON (overload.py) under the same gate, accounting and retries.
"""
import argparse
import json
import os
import subprocess
import sys
import time

from jit_quiet import warm_until_quiet

HZ = os.sysconf("SC_CLK_TCK")


def cpu_busy():
    """(busy, steal) jiffies over all CPUs."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    v = [int(x) for x in fields]
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    return user + nice + system + irq + softirq, steal


def pids_with_children(pids):
    out = set()
    todo = list(pids)
    while todo:
        p = todo.pop()
        if p in out or not os.path.exists(f"/proc/{p}"):
            continue
        out.add(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def proc_jiffies(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rindex(")") + 2:].split()  # fields after "pid (comm)": state is rest[0] (field 3)
        total += int(rest[11]) + int(rest[12])  # utime (14), stime (15)
    return total


def read_servers(path):
    """[(pid, name)] from the pids file: one "pid name" line per server."""
    with open(path) as f:
        return [(int(line.split()[0]), line.split()[1]) for line in f if line.strip()]


def read_pids(path):
    return [pid for pid, _ in read_servers(path)]


def check_alive(path):
    """Every server must still run: one killed from outside would make a run measure nothing."""
    for pid, name in read_servers(path):
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "gone"
        if state in ("gone", "Z", "X"):
            sys.exit(f"bench-proxy: server {name} (pid {pid}) has exited; see its log in logs/{name}.log "
                     f"(a SIGTERM from outside shows as 'draining' in a gateway's log)")


def snapshot(pids_file):
    busy, steal = cpu_busy()
    return busy, steal, proc_jiffies(pids_with_children(read_pids(pids_file))), time.monotonic()


def foreign_percent(before, after, extra_jiffies=0.0):
    """CPU used by processes other than ours (and wrk) between two snapshots, in % of one core."""
    wall = after[3] - before[3]
    foreign = (after[0] - before[0]) - (after[2] - before[2]) - extra_jiffies
    return max(0.0, 100.0 * foreign / HZ / wall), 100.0 * (after[1] - before[1]) / HZ / wall


QUIET_SPENT = [0.0]
# The hypervisor's steal (/proc/stat), in % of one core, above which a run is noisy: on a shared host it took
# 0.7 to 74 % of a core during the runs of one bench-proxy run on 2026-12-07 (23:01 UTC), when the same
# gateway served a third of its quiet req/s; the quiet runs of that morning read 0 to 0.33 %. Low steal is
# not proof of a quiet host (docs/benchmarks.md, "Tracing").
STEAL_MAX = 5.0


def quiet_gate(args):
    """Waits until foreign load and the hypervisor's steal are low, at most --quiet-wait s per run and
    --quiet-budget s in all."""
    waited = 0.0
    check_alive(args.pids_file)
    while True:
        a = snapshot(args.pids_file)
        time.sleep(1.0)
        b = snapshot(args.pids_file)
        foreign, steal = foreign_percent(a, b)
        quiet = foreign <= args.quiet_max and steal <= args.max_steal
        if quiet or waited >= args.quiet_wait or QUIET_SPENT[0] >= args.quiet_budget:
            return foreign, waited
        time.sleep(2.0)
        waited += 3.0
        QUIET_SPENT[0] += 3.0


def wrk(args, url, conns, duration, raw_path):
    cmd = ["taskset", "-c", str(args.client_cpu), "wrk", "-t1", f"-c{conns}", f"-d{int(round(duration))}s", "--timeout", "5s",
           "-s", args.lua, url]
    env = dict(os.environ, BENCH_BODY=args.body)
    with open(raw_path, "w") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"bench-proxy: wrk failed ({p.returncode}); see {raw_path}")
    result = None
    with open(raw_path) as f:
        for line in f:
            if line.startswith("BENCH_JSON "):
                result = json.loads(line[len("BENCH_JSON "):])
    if result is None:
        sys.exit(f"bench-proxy: no BENCH_JSON line in {raw_path}")
    result["wrk_cpu_s"] = usage.ru_utime + usage.ru_stime
    return result


def measure_command(args, cmd):
    """--exec-json: one command (the overload loader) under the same quiet gate, CPU accounting and
    retries as a wrk run; its JSON output, with those figures added, goes to --exec-json."""
    best = None
    for attempt in range(1, args.retries + 2):
        foreign_before, waited = quiet_gate(args)
        before = snapshot(args.pids_file)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        out, _ = p.communicate()
        after = snapshot(args.pids_file)
        if p.returncode != 0:
            sys.exit(f"bench-proxy: {' '.join(cmd)} failed ({p.returncode})")
        result = json.loads(out)
        # the loader spins on the client CPU: count a whole core as its own
        foreign, steal = foreign_percent(before, after, HZ * (after[3] - before[3]))
        result.update(attempt=attempt, foreign_cpu_percent=foreign, steal_percent=steal,
                      foreign_cpu_percent_before=foreign_before, quiet_wait_s=waited,
                      started_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - (after[3] - before[3]))))
        noisy = foreign > args.max_foreign or steal > args.max_steal
        print(f"  {os.path.basename(args.exec_json)}: foreign cpu {foreign:5.1f}%  steal {steal:5.1f}%"
              + (f" (waited {waited:.0f} s for quiet)" if waited else "")
              + (" NOISY, again" if noisy and attempt <= args.retries else " NOISY" if noisy else ""), flush=True)
        if best is None or foreign + steal < best["foreign_cpu_percent"] + best["steal_percent"]:
            best = result
        if not noisy:
            break
    best["noisy"] = best["foreign_cpu_percent"] > args.max_foreign or best["steal_percent"] > args.max_steal
    with open(args.exec_json, "w") as f:
        json.dump(best, f)


def main():
    if "--exec-json" in sys.argv:
        split = sys.argv.index("--")
        ap = argparse.ArgumentParser()
        ap.add_argument("--exec-json", required=True)
        ap.add_argument("--pids-file", required=True)
        ap.add_argument("--quiet-max", type=float, default=10.0)
        ap.add_argument("--quiet-wait", type=float, default=60.0)
        ap.add_argument("--quiet-budget", type=float, default=600.0)
        ap.add_argument("--max-foreign", type=float, default=25.0)
        ap.add_argument("--retries", type=int, default=2)
        ap.add_argument("--max-steal", type=float, default=STEAL_MAX)
        measure_command(ap.parse_args(sys.argv[1:split]), sys.argv[split + 1:])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--targets", required=True, help="name=url,... (url of the POST)")
    ap.add_argument("--conns", required=True, help="space-separated connection counts")
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--duration", type=int, required=True, help="seconds per run")
    ap.add_argument("--warmup", type=int, required=True, help="seconds at 16 connections per sluice target")
    ap.add_argument("--warmup-other", type=int, default=2, help="seconds per other target")
    ap.add_argument("--warmup-requests", type=int, default=50000, help="requests a sluice target serves in warm-up")
    ap.add_argument("--jit-quiet", type=float, default=2.0,
                    help="then warm a sluice target in 5 s chunks at the largest connection count until its JIT "
                         "compiler threads take less than this %% of a core over a chunk (0: no such chunks)")
    ap.add_argument("--jit-max", type=float, default=90.0, help="seconds of such chunks at most per target")
    ap.add_argument("--body", required=True)
    ap.add_argument("--lua", required=True)
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--pids-file", required=True, help="file with the pids of every server process")
    ap.add_argument("--quiet-max", type=float, default=10.0, help="% of one core")
    ap.add_argument("--quiet-wait", type=float, default=60.0, help="seconds per run")
    ap.add_argument("--max-foreign", type=float, default=25.0,
                    help="% of one core used by other processes during a run above which it is run again")
    ap.add_argument("--retries", type=int, default=2, help="runs again of a noisy run")
    ap.add_argument("--max-steal", type=float, default=STEAL_MAX,
                    help="%% of one core the hypervisor took from this machine (steal) during a run above which it "
                         "is run again, and that the quiet gate waits to fall under")
    ap.add_argument("--quiet-budget", type=float, default=600.0, help="seconds of waiting in the whole run")
    ap.add_argument("--before", default=None,
                    help="JSON file {target: shell command}: run before each warm-up and each run of that target "
                         "(bench-proxy's switched tracing targets: the gateway's tracing set by a live reload)")
    args = ap.parse_args()
    hooks = json.load(open(args.before)) if args.before else {}

    def run_hook(name):
        if name in hooks:
            subprocess.run(["bash", "-c", hooks[name]], check=True)

    targets = [tuple(t.split("=", 1)) for t in args.targets.split(",")]
    conns = [int(c) for c in args.conns.split()]
    raw = os.path.join(args.run_dir, "raw")
    os.makedirs(raw, exist_ok=True)
    runs = open(os.path.join(args.run_dir, "runs.jsonl"), "w")

    for name, url in targets:
        # a JIT compiles by invocation counts: a Sluice target is warmed until it has served
        # --warmup-requests (in --warmup s chunks, at most 4), each chunk behind the quiet gate
        sluice = name.startswith("sluice")
        seconds = args.warmup if sluice else args.warmup_other
        run_hook(name)
        served, chunk = 0, 0
        while seconds > 0 and chunk < (4 if sluice else 1):
            chunk += 1
            quiet_gate(args)
            r = wrk(args, url, 16, seconds, os.path.join(raw, f"warmup-{name}-{chunk}.txt"))
            served += r["requests"]
            print(f"warm-up {name:14s} {seconds:4d} s at 16 connections: {r['requests'] / r['duration_us'] * 1e6:9.0f} req/s",
                  flush=True)
            if not sluice or served >= args.warmup_requests:
                break
        if sluice and args.jit_quiet > 0:
            # then until the JIT is quiet (jit_quiet.py says why: the compilers share the server's one core,
            # and more code on the request path compiles longer); the same rule for every Sluice target
            pid = next((p for p, n in read_servers(args.pids_file) if n == name), None)
            if pid is None:
                sys.exit(f"bench-proxy: no pid for {name} in {args.pids_file}")
            seen = warm_until_quiet(pid, lambda s: wrk(args, url, max(conns), s, os.path.join(raw, f"warmup-{name}-jit.txt")),
                                    name, 5, args.jit_quiet, args.jit_max, gate=lambda: quiet_gate(args))
            with open(os.path.join(args.run_dir, "warmup.jsonl"), "a") as w:
                w.write(json.dumps({"target": name, **seen}) + "\n")
        if sluice and seconds > 0:
            # and at one connection: that run's own paths (a wake-up and a flush per request) are
            # compiled separately; without it the first 1-connection round measured the JIT
            # (2026-12-03 17:28: sluice-none p99 2829 us in round 1, 321 us in round 2)
            quiet_gate(args)
            r = wrk(args, url, 1, max(1, seconds // 2), os.path.join(raw, f"warmup-{name}-c1.txt"))
            print(f"warm-up {name:14s} {max(1, seconds // 2):4d} s at  1 connection:  {r['requests'] / r['duration_us'] * 1e6:9.0f} req/s",
                  flush=True)
    for rnd in range(1, args.rounds + 1):
        k = (rnd - 1) % len(targets)
        order = targets[k:] + targets[:k]
        for c in conns:
            for name, url in order:
                rec = None
                run_hook(name)
                for attempt in range(1, args.retries + 2):
                    foreign_before, waited = quiet_gate(args)
                    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                    suffix = "" if attempt == 1 else f"-attempt{attempt}"
                    before = snapshot(args.pids_file)
                    r = wrk(args, url, c, args.duration, os.path.join(raw, f"r{rnd}-c{c}-{name}{suffix}.txt"))
                    after = snapshot(args.pids_file)
                    foreign, steal = foreign_percent(before, after, r["wrk_cpu_s"] * HZ)
                    candidate = {"round": rnd, "conns": c, "target": name, "url": url, "started_utc": started,
                                 "attempt": attempt, "rps": r["requests"] / (r["duration_us"] / 1e6), "wrk": r,
                                 "servers_cpu_percent": 100.0 * (after[2] - before[2]) / HZ / (after[3] - before[3]),
                                 "foreign_cpu_percent": foreign, "steal_percent": steal,
                                 "foreign_cpu_percent_before": foreign_before, "quiet_wait_s": waited}
                    if rec is None or foreign + steal < rec["foreign_cpu_percent"] + rec["steal_percent"]:
                        rec = candidate  # of noisy attempts, keep the least disturbed one
                    noisy = foreign > args.max_foreign or steal > args.max_steal
                    lat = r["latency_us"]
                    errs = sum(r["errors"].values())
                    print(f"round {rnd} c={c:<3d} {name:14s} {candidate['rps']:9.0f} req/s  p50 {lat['p50']:6d} us  "
                          f"p99 {lat['p99']:7d} us  errors {errs}  foreign cpu {foreign:5.1f}%  steal {steal:5.1f}%"
                          + (f" (waited {waited:.0f} s for quiet)" if waited else "")
                          + (" NOISY, again" if noisy and attempt <= args.retries else " NOISY" if noisy else ""),
                          flush=True)
                    if not noisy:
                        break
                rec["noisy"] = rec["foreign_cpu_percent"] > args.max_foreign or rec["steal_percent"] > args.max_steal
                runs.write(json.dumps(rec) + "\n")
                runs.flush()


if __name__ == "__main__":
    main()
