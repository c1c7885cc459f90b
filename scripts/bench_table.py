"""The Markdown table the load benchmarks print: `peoplekeeper-bench load` runs (their JSON in one
directory) side by side, one row per workload and variant (service threads, event loops, ...).
Used by scripts/bench-threads.sh and scripts/bench-eventloop.sh."""
import json
import os


def load(out, name):
    """The run `name` in directory `out`, or None if it did not run."""
    path = f"{out}/{name}.json"
    return json.load(open(path)) if os.path.exists(path) else None


def print_table(out, rows, variants, variant_title, extra=None, prefix=""):
    """One row per (workload, variant) that ran, the run named "PREFIXVARIANT-KEY" for each (key, title)
    of `rows`. `extra` adds a column: (its title, a function of variant and key giving the cell)."""
    head = ["workload", variant_title, "revisions/s", "deliveries/s", "latency p50 / p99 / max (ms)", "hub CPU s"]
    if extra:
        head.append(extra[0])
    head += ["µs CPU / delivery", "RSS / connection", "checks"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for key, title in rows:
        for variant in variants:
            r = load(out, f"{prefix}{variant}-{key}")
            if not r:
                continue
            lat = r["latencyMillis"]
            ok = "ok" if not r["problems"] and r.get("converged", True) else "FAILED"
            revs = r["revisions"] / r["elapsedSeconds"]
            cells = [title, variant, f"{revs:,.0f}", f'{r["deliveriesPerSecond"]:,.0f}',
                     f'{lat["p50"]:.2f} / {lat["p99"]:.2f} / {lat["max"]:.1f}', f'{r.get("serverCPUSeconds", 0):.2f}']
            if extra:
                cells.append(extra[1](variant, key))
            cells += [f'{r.get("serverCPUMicrosPerDelivery", 0):.2f}', f'{r.get("serverRSSKiBPerConnection", 0):.1f} KiB', ok]
            print("| " + " | ".join(cells) + " |")


def print_ratio(out, key, field, what, a, b, prefix="", unit=""):
    """`field` of run PREFIXb-KEY over that of PREFIXa-KEY (`unit` after each name), if both ran."""
    ra, rb = load(out, f"{prefix}{a}-{key}"), load(out, f"{prefix}{b}-{key}")
    if ra and rb and ra.get(field):
        print(f"\n{what}: {b}{unit} / {a}{unit} = {rb[field] / ra[field]:.2f}x", end="")
