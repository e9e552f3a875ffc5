#!/usr/bin/env python3
"""One chart per bench-overload scenario: three panels over time (seconds since the first send).

1. queue depth: Sluice's gateway queue (every priority class) against the unprotected router's
   prefill queue (the simulated prefill's waiting plus running requests), from each report's timeline;
2. TTFT of each served request, placed at its send time; filled marker = met its TTFT objective,
   hollow = missed it; one marker shape per client class when the scenario has classes;
3. rejections (429/503 from Sluice) and give-ups (clients that left), at the time they happened.

Usage: charts.py --scenario NAME --direct direct.json --gateway gateway.json --out chart.png
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RUNS = (("direct", "unprotected router", "tab:red"), ("gateway", "Sluice", "tab:blue"))
SHAPES = ["o", "s", "^", "D", "v"]


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--direct", required=True)
    ap.add_argument("--gateway", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    reports = {"direct": load(a.direct), "gateway": load(a.gateway)}
    classes = sorted({q.get("class") for r in reports.values() for q in r.get("requests", []) if q.get("class")})
    shape = {c: SHAPES[i % len(SHAPES)] for i, c in enumerate(classes)}

    fig, (qax, tax, eax) = plt.subplots(3, 1, sharex=True, figsize=(11, 10))
    fig.suptitle("bench-overload scenario %s: %s vs %s" % (
        a.scenario, reports["gateway"].get("label", "Sluice"), reports["direct"].get("label", "unprotected")))

    for key, name, color in RUNS:
        tl = [s for s in reports[key].get("timeline", []) if s.get("queue_depth") is not None]
        what = "gateway queue" if key == "gateway" else "prefill queue (waiting + running)"
        qax.step([s["t_ms"] / 1000 for s in tl], [s["queue_depth"] for s in tl], where="post", color=color,
                 label="%s: %s" % (name, what))
    qax.set_ylabel("requests queued")
    qax.legend(loc="upper right", fontsize=8)
    qax.grid(alpha=0.3)

    for key, name, color in RUNS:
        served = [q for q in reports[key].get("requests", []) if q.get("outcome") == "completed"
                  and q.get("first_token_ms") is not None and q.get("send_ms") is not None]
        groups = {}
        for q in served:
            slo = q.get("slo_ttft_ms")
            ttft = q["first_token_ms"] - q["send_ms"]
            met = slo is None or ttft <= slo
            groups.setdefault((q.get("class"), met), []).append((q["send_ms"] / 1000, ttft / 1000))
        for (cls, met), pts in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            label = "%s%s, %s" % (name, " " + cls if cls else "", "met SLO" if met else "missed SLO")
            tax.scatter([p[0] for p in pts], [p[1] for p in pts], s=22, marker=shape.get(cls, "o"),
                        facecolors=color if met else "none", edgecolors=color, label=label)
    for cls in classes or [None]:
        slos = {q.get("slo_ttft_ms") for r in reports.values() for q in r.get("requests", [])
                if q.get("class") == cls and q.get("slo_ttft_ms")}
        for slo in slos:
            tax.axhline(slo / 1000, color="grey", linestyle=":", linewidth=1)
    tax.set_ylabel("TTFT (s) at send time")
    tax.legend(loc="upper right", fontsize=7, ncol=2)
    tax.grid(alpha=0.3)

    rows = []
    for key, name, color in RUNS:
        rej = [q["rejected_ms"] / 1000 for q in reports[key].get("requests", []) if q.get("rejected_ms") is not None]
        gave = [q["end_ms"] / 1000 for q in reports[key].get("requests", [])
                if q.get("outcome") == "gave_up" and q.get("end_ms") is not None]
        failed = [q["end_ms"] / 1000 for q in reports[key].get("requests", [])
                  if q.get("outcome") == "failed" and q.get("end_ms") is not None]
        for label, times, marker in (("rejected", rej, "x"), ("gave up", gave, "|"), ("failed", failed, "*")):
            if times:
                y = len(rows)
                rows.append("%s %s" % (name, label))
                eax.scatter(times, [y] * len(times), marker=marker, color=color, s=40,
                            label="%s: %s (%d)" % (name, label, len(times)))
    eax.set_yticks(range(len(rows)))
    eax.set_yticklabels(rows, fontsize=8)
    eax.set_ylim(-0.8, max(len(rows), 1) - 0.2)
    eax.set_xlabel("seconds since the first send")
    eax.grid(alpha=0.3, axis="x")
    if rows:
        eax.legend(loc="upper right", fontsize=7)

    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print("chart: %s" % a.out)


if __name__ == "__main__":
    main()
