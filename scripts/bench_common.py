"""Shared by the HTTP API benchmarks (scripts/bench-http.sh): process CPU from /proc, percentiles,
a fixed-width table. Standard library only."""
import os

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (/proc/PID/stat; 10 ms ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def process_times():
    """{pid: (start time, CPU ticks)} of every process now: user + system time, its reaped children's
    included (/proc/PID/stat fields 14-17, 22)."""
    times = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            times[int(name)] = (fields[19], sum(int(v) for v in fields[11:15]))
    return times


def machine_cpu_since(before):
    """CPU seconds every process on the machine (the benchmark's, anything else's, kernel threads) used
    since `before` = process_times(): processes new since then count whole, those gone are left out.
    Summed per process because /proc/stat's tick-sampled totals read far too low for a load that
    sleeps and wakes thousands of times a second (6% busy while the hub alone used 20%)."""
    total = 0
    for pid, (start, ticks) in process_times().items():
        then = before.get(pid)
        total += ticks - then[1] if then and then[0] == start else ticks
    return total / TICKS


def summary(values):
    """p50 / p99 / max / mean of a list of numbers (nearest rank), rounded to 3 places; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    n = len(ordered)

    def rank(p):
        return ordered[min(n - 1, max(0, -(-n * p // 100) - 1))]

    return {"p50": round(rank(50), 3), "p99": round(rank(99), 3), "max": round(ordered[-1], 3),
            "mean": round(sum(ordered) / n, 3), "count": n}


def table(header, rows):
    """The rows (lists of cells) under the header, columns padded to their widest cell."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
