#!/usr/bin/env python3
# Latency vs offered load, the hub and pycrdt-websocket: p50 and p99 of submit-to-delivery latency
# (from each edit's due time on the pacing schedule to its receipt at each other client) against the
# total offered edit rate, log-log, from the sweep JSON that scripts/bench-peers.sh writes
# (sweep-RATE-{hub,pycrdt}.json, the keys of `peoplekeeper-bench load --json`). A run whose checks
# failed is drawn as a hollow marker. PNG, matplotlib's Agg backend (no display needed).
#
#   .build/bench-venv/bin/python scripts/plot_latency.py [DIR] [PNG]
#       (defaults: .build/bench/peers docs/images/latency-vs-load.png)
import glob
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

SERVERS = [("hub", "PeopleKeeper hub", "tab:blue"), ("pycrdt", "pycrdt-websocket 0.16.5", "tab:orange")]


def load(directory: str, server: str) -> list[dict]:
    runs = []
    for path in glob.glob(os.path.join(directory, f"sweep-*-{server}.json")):
        if re.search(r"sweep-[0-9.]+-", os.path.basename(path)):
            with open(path) as f:
                runs.append(json.load(f))
    return sorted(runs, key=lambda r: r["rate"] * r["writers"])


def main() -> None:
    directory = sys.argv[1] if len(sys.argv) > 1 else ".build/bench/peers"
    png = sys.argv[2] if len(sys.argv) > 2 else "docs/images/latency-vs-load.png"
    fig, ax = plt.subplots(figsize=(9, 5.6), dpi=120)
    clients = writers = seconds = None
    rates = set()
    failed = False
    for server, name, colour in SERVERS:
        runs = load(directory, server)
        if not runs:
            continue
        clients, writers, seconds = runs[0]["clients"], runs[0]["writers"], runs[0]["seconds"]
        x = [r["rate"] * r["writers"] for r in runs]
        rates.update(x)
        for key, style, marker in (("p50", "-", "o"), ("p99", "--", "s")):
            y = [r["latencyMillis"][key] for r in runs]
            label = f"{name}, {key}"
            if key == "p50":
                label += f" (at most {max(r['deliveriesPerSecond'] for r in runs):,.0f} deliveries/s)"
            ax.plot(x, y, style, color=colour, marker=marker, label=label)
            bad = [(xi, yi) for xi, yi, r in zip(x, y, runs) if r["problems"] or not r["converged"]]
            if bad:
                failed = True
                ax.plot(*zip(*bad), linestyle="none", marker=marker, markersize=11, markerfacecolor="white",
                        markeredgecolor="red", zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sorted(rates))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    deliveries = f" (× {clients - 1} deliveries each)" if clients else ""
    ax.set_xlabel(f"offered load: edits per second, all writers together{deliveries}")
    ax.set_ylabel("latency, due time → receipt at each other client (ms)")
    ax.set_title(f"Latency vs offered load: {clients} clients in one room, {writers} writer{'' if writers == 1 else 's'},"
                 f" {seconds:g} s per point"
                 if clients else "Latency vs offered load")
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", axis="y", alpha=0.15)
    ax.legend(loc="upper left", fontsize=9)
    note = "solid: p50, dashed: p99" + ("; red ring: that run's checks failed" if failed else "")
    fig.text(0.99, 0.01, note + "; same machine, same run (scripts/bench-peers.sh)",
             ha="right", va="bottom", fontsize=7, color="gray")
    fig.tight_layout(rect=(0, 0.025, 1, 1))
    os.makedirs(os.path.dirname(png) or ".", exist_ok=True)
    fig.savefig(png)


if __name__ == "__main__":
    main()
