#!/usr/bin/python3
"""Charts of scripts/bench-proxy from results.json (needs matplotlib: Debian's python3-matplotlib).

  charts.py RESULTS_JSON OUT_DIR   writes added-latency.png (added p50 and p99 by connection count,
                                   one line per target) and throughput.png (req/s vs HAProxy).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["haproxy", "nginx", "sluice-none", "sluice-none-coord", "sluice-sglang", "sluice-sglang-coord", "sluice-vllm"]
STYLE = {"haproxy": ("tab:green", "o"), "nginx": ("tab:olive", "s"), "sluice-none": ("tab:blue", "^"),
         "sluice-none-coord": ("tab:cyan", "^"), "sluice-sglang": ("tab:purple", "D"),
         "sluice-sglang-coord": ("tab:pink", "D"), "sluice-vllm": ("tab:red", "v")}


def mark_noisy(ax, summary, target, xs, ys):
    """Rings the points whose runs (or direct's, the reference) other processes disturbed."""
    for x, y in zip(xs, ys):
        cell = summary[str(x)]
        if cell[target].get("noisy_runs") or cell.get("direct", {}).get("noisy_runs") \
                or cell.get("haproxy", {}).get("noisy_runs"):
            ax.plot([x], [y], marker="o", markersize=14, markerfacecolor="none", markeredgecolor="red",
                    linestyle="none")


def main():
    results, out = json.load(open(sys.argv[1])), sys.argv[2]
    summary = results["summary"]
    conns = sorted(int(c) for c in summary)
    targets = [t for t in ORDER if any(t in summary[str(c)] for c in conns)]
    env = results.get("env", {})
    subtitle = (f"{env.get('date_utc', '')}, commit {env.get('commit', '?')}, {env.get('rounds', '?')} rounds x "
                f"{env.get('duration_s', '?')} s; red ring: a run other processes disturbed")

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, title in ((axes[0], "added_p50_us", "added p50"), (axes[1], "added_p99_us", "added p99")):
        for t in targets:
            xs = [c for c in conns if t in summary[str(c)]]
            ys = [summary[str(c)][t][key] for c in xs]
            color, marker = STYLE.get(t, (None, "x"))
            ax.plot(xs, ys, marker=marker, color=color, label=t)
            mark_noisy(ax, summary, t, xs, ys)
        ax.set_xscale("log", base=2)
        ax.set_xticks(conns, [str(c) for c in conns])
        ax.set_xlabel("connections (wrk, keep-alive)")
        ax.set_ylabel("µs over direct")
        ax.set_title(f"{title} (target minus direct, same round)")
        ax.axhline(0, color="grey", linewidth=0.5)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle("Latency added by the proxy: static backend, one thread each, servers on CPU 0, wrk on CPU 1\n" + subtitle,
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(f"{out}/added-latency.png", dpi=110)

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for t in targets:
        xs = [c for c in conns if t in summary[str(c)]]
        ys = [summary[str(c)][t]["rps_ratio_vs_haproxy"] for c in xs]
        color, marker = STYLE.get(t, (None, "x"))
        ax.plot(xs, ys, marker=marker, color=color, label=t)
        mark_noisy(ax, summary, t, xs, ys)
    ax.set_xscale("log", base=2)
    ax.set_xticks(conns, [str(c) for c in conns])
    ax.set_xlabel("connections (wrk, keep-alive)")
    ax.set_ylabel("req/s / HAProxy's req/s (same round)")
    ax.axhline(0.9, color="tab:blue", linestyle=":", linewidth=1, label="goal none (0.9x)")
    ax.axhline(0.6, color="tab:purple", linestyle=":", linewidth=1, label="goal sglang (0.6x)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Throughput relative to HAProxy\n" + subtitle, fontsize=9)
    fig.tight_layout()
    fig.savefig(f"{out}/throughput.png", dpi=110)


if __name__ == "__main__":
    main()
