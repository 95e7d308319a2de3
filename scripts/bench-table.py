#!/usr/bin/env python3
"""Print scripts/bench's results as Markdown.

Input: the raw TSV written by scripts/bench, one line per download:
    size_label  bytes  run  tool  wall_s  elapsed_s  user_s  sys_s  maxrss_kb
where wall_s is the high-resolution wall time measured by the script and
elapsed_s is /usr/bin/time -v's "Elapsed (wall clock) time" (10 ms resolution).

Output: the summary table (medians over runs; "wall vs curl" is the median of
per-run ratios tool wall / curl wall, "wall vs curl+sync" the same against curl
followed by `sync -d` of its file) followed by the raw per-run numbers.
"""
import sys
from collections import OrderedDict
from statistics import median

TOOLS_ORDER = ["swoop", "curl", "curl+sync", "aria2c"]


def human_size(label, nbytes):
    for unit, factor in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= factor and nbytes % factor == 0:
            return f"{nbytes // factor} {unit}"
    return f"{label} ({nbytes} B)"


def same_run_ratio(runs, baseline):
    """The median over runs of (wall / the baseline's wall in the same run), as text."""
    ratios = [runs[n]["wall"] / baseline[n]["wall"] for n in runs if n in baseline and baseline[n]["wall"] > 0]
    return f"{median(ratios):.2f}" if ratios else "n/a"


def main(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            label, nbytes, run, tool, wall, elapsed, user, sys_, rss = line.split("\t")
            rows.append(dict(label=label, bytes=int(nbytes), run=int(run), tool=tool,
                             wall=float(wall), elapsed=float(elapsed), user=float(user),
                             sys=float(sys_), rss_kb=int(rss)))
    if not rows:
        sys.exit("bench-table: no results in " + path)

    sizes = OrderedDict()
    for r in rows:
        sizes.setdefault((r["label"], r["bytes"]), []).append(r)

    print("| size | tool | wall s (median) | MB/s | CPU s (user+sys) | peak RSS MiB | wall vs curl | wall vs curl+sync |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (label, nbytes), rs in sizes.items():
        by_tool = OrderedDict()
        for t in TOOLS_ORDER + sorted({r["tool"] for r in rs} - set(TOOLS_ORDER)):
            tr = [r for r in rs if r["tool"] == t]
            if tr:
                by_tool[t] = {r["run"]: r for r in tr}
        curl = by_tool.get("curl", {})
        synced = by_tool.get("curl+sync", {})
        for tool, runs in by_tool.items():
            walls = [r["wall"] for r in runs.values()]
            wall = median(walls)
            cpu = median(r["user"] + r["sys"] for r in runs.values())
            rss = median(r["rss_kb"] for r in runs.values()) / 1024
            ratio, synced_ratio = same_run_ratio(runs, curl), same_run_ratio(runs, synced)
            mbps = nbytes / 1e6 / wall if wall > 0 else float("inf")
            print(f"| {human_size(label, nbytes)} | {tool} | {wall:.3f} | {mbps:.0f} | {cpu:.2f} | {rss:.1f} | {ratio} | {synced_ratio} |")

    print()
    print("Raw per-run numbers (wall s: measured by the script; elapsed s: /usr/bin/time -v):")
    print()
    print("| size | run | tool | wall s | elapsed s | user s | sys s | max RSS KiB | MB/s |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        mbps = r["bytes"] / 1e6 / r["wall"] if r["wall"] > 0 else float("inf")
        print(f"| {human_size(r['label'], r['bytes'])} | {r['run']} | {r['tool']} | {r['wall']:.3f} | "
              f"{r['elapsed']:.2f} | {r['user']:.2f} | {r['sys']:.2f} | {r['rss_kb']} | {mbps:.0f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: bench-table.py RAW.tsv")
    main(sys.argv[1])
