#!/usr/bin/env python3
"""scripts/bench-many.py — many small files, 16 at once.

Run by scripts/bench (BENCH_SUITES="many"), or directly:

    python3 scripts/bench-many.py --swoop .build/release/swoop --nginx /usr/sbin/nginx [--count 2000] [--size 65536] [--work DIR | --fresh-ext4] [--baseline OTHER_SWOOP] [--ahc-floor scripts/ahc-floor/.build/release/ahc-floor]

A private nginx on 127.0.0.1 serves COUNT files of SIZE bytes. Each tool fetches them all with 16
at once: `swoop get -i LIST -j 16`, `aria2c -i LIST -j 16`, `curl --parallel --parallel-max 16`,
and `curl+sync`: the same curl followed by `sync -f` of the directory, the durability Swoop gives
(every file flushed before it has its name). With --ahc-floor, also `ahc` (scripts/ahc-floor): the
same files fetched with AsyncHTTPClient, configured as Swoop configures it, and nothing else (no
store, lock, part file or flush), the floor of Swoop's own work. Every output is checked by sha-256 (one digest for
all: the files are the same bytes). Each tool runs RUNS times (3), the rounds in rotated order,
each run into a fresh directory under --work (a tmpfs measures the engine, a disk the flushes).
--fresh-ext4 (root) runs on a journaled ext4 made for the measurement and removed after it: on this
machine's root file system (ext4 without a journal) making a file costs more after every deletion
of the last minutes, so figures on /tmp depend on what ran before (see benchlib.fresh_ext4).
Prints the median run's wall time, files per second, CPU seconds and peak RSS, and Swoop's
same-run ratios to each other tool (median over runs), as a Markdown table. --baseline runs a
second swoop binary as the tool swoop-base, in the same rotation: an A/B of two builds.
"""


import benchlib
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


TOOLS = ["swoop", "curl", "curl+sync", "aria2c"]


def say(message):
    print(f"bench-many: {message}", file=sys.stderr, flush=True)


def start_nginx(nginx, work):
    process, port, _ = benchlib.start_nginx(
        nginx, work, label="bench-many", http="keepalive_requests 100000;", server=f"root {work}/www;"
    )
    return process, port


def main():
    parser = benchlib.argument_parser(__doc__)
    parser.add_argument("--swoop", required=True, help="the swoop binary to measure (.build/release/swoop)")
    parser.add_argument("--nginx", required=True, help="the nginx binary that serves the files (/usr/sbin/nginx)")
    parser.add_argument("--count", type=int, default=2000, help="how many files (2000)")
    parser.add_argument("--size", type=int, default=64 * 1024, help="each file's size in bytes (65536)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each tool, in rotated order (3)")
    parser.add_argument("--work", help="where the files are served from and written to (kept); a temporary directory, removed, without it")
    parser.add_argument("--fresh-ext4", action="store_true", help="run on a journaled ext4 made for this measurement (root; a loop-mounted sparse image, removed after)")
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated, from " + ", ".join(TOOLS + ["ahc"]) + " (all but ahc)")
    parser.add_argument("--baseline", help="another swoop binary, run as the tool swoop-base beside swoop (an A/B)")
    parser.add_argument("--ahc-floor", help="scripts/ahc-floor's binary, run as the tool ahc: AsyncHTTPClient alone, the floor")
    args = parser.parse_args()
    if args.fresh_ext4 and args.work:
        parser.error("--fresh-ext4 and --work name two places to write to: give one")
    # The tools run with their output directory as the working directory: a relative path would
    # name nothing there.
    for name in ("swoop", "baseline", "ahc_floor"):
        path = getattr(args, name)
        if path and os.sep in path:
            setattr(args, name, os.path.abspath(path))
    if args.work:
        args.work = os.path.abspath(args.work)
    benchlib.prepare_binaries(args.swoop, "curl", "aria2c", *[b for b in (args.baseline, args.ahc_floor) if b])
    tools = [tool for tool in args.tools.split(",") if tool]
    unknown = [tool for tool in tools if tool not in TOOLS + ["ahc"]]
    if unknown:
        parser.error(f"unknown tool {', '.join(unknown)}: the tools are {', '.join(TOOLS + ['ahc'])}")
    if "ahc" in tools and not args.ahc_floor:
        parser.error("the tool ahc needs --ahc-floor (scripts/ahc-floor's binary)")
    if args.baseline:
        tools.insert(tools.index("swoop") + 1 if "swoop" in tools else 0, "swoop-base")
    if args.ahc_floor and "ahc" not in tools:
        tools.append("ahc")
    if args.fresh_ext4:
        # The served files, then every run's output, all kept until the end; room to spare.
        size = args.count * (args.size + 4096) * (1 + args.runs * len(tools)) * 3 // 2 + (512 << 20)
        files = args.count * (1 + args.runs * len(tools))
        with benchlib.fresh_ext4(size, files=files, label="bench-many") as mount_point:
            rows, file_system = measure(args, tools, mount_point)
        report(args, tools, rows, file_system + " (journaled, made for this run: --fresh-ext4)", None)
        return
    work = args.work or tempfile.mkdtemp(prefix="swoop-bench-many.")
    try:
        rows, file_system = measure(args, tools, work)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    report(args, tools, rows, file_system, work)


def measure(args, tools, work):
    """Every run of every tool; returns ({tool: [(wall s, CPU s, peak RSS MiB)]}, the file system's type)."""
    www = os.path.join(work, "www")
    os.makedirs(www, exist_ok=True)
    file_system = subprocess.run(["df", "--output=fstype", work], capture_output=True, text=True).stdout.split()[-1:]
    file_system = file_system[0] if file_system else ""
    body = os.urandom(args.size)
    digest = hashlib.sha256(body).hexdigest()
    names = [f"f{i:05d}.bin" for i in range(args.count)]
    for name in names:
        with open(os.path.join(www, name), "wb") as f:
            f.write(body)
    nginx, port = start_nginx(args.nginx, work)
    urls = [f"http://127.0.0.1:{port}/{name}" for name in names]
    listing = os.path.join(work, "urls.txt")
    with open(listing, "w") as f:
        f.write("\n".join(urls) + "\n")
    rows = {tool: [] for tool in tools}
    try:
        for run in range(args.runs):
            # Each round starts with a different tool; every run writes into a fresh directory and
            # nothing is deleted until the end: ext4 scans past recently deleted inodes when it
            # creates files, which would slow whichever tool runs after a deletion.
            for tool in tools[run % len(tools):] + tools[:run % len(tools)]:
                rows[tool].append(run_tool(tool, args, work, run, listing, urls, names, digest))
    finally:
        benchlib.stop_nginx(nginx)
        for run in range(args.runs):
            for tool in tools:
                shutil.rmtree(os.path.join(work, f"out-{tool}-{run}"), ignore_errors=True)
                shutil.rmtree(os.path.join(work, f"state-{tool}-{run}"), ignore_errors=True)
    return rows, file_system


def report(args, tools, rows, file_system, work):
    # The median run of each tool by wall time.
    medians = {tool: sorted(runs)[len(runs) // 2] for tool, runs in rows.items()}
    place = work if args.work else "a temporary directory, removed" if work else "a loop-mounted image, removed"
    print(f"### {args.count} files of {args.size >> 10} KiB, 16 at once (nginx on 127.0.0.1, keep-alive; median of {args.runs}; into {file_system or 'an unknown file system'}: {place})")
    print()
    print(f"Every file of every run was checked: its sha-256 is the source's.")
    print()
    print("| tool | wall s | files/s | CPU s | peak RSS MiB | all runs (wall s) |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for tool in tools:
        wall, cpu, rss = medians[tool]
        runs = ", ".join(f"{r[0]:.2f}" for r in rows[tool])
        print(f"| {tool} | {wall:.2f} | {args.count / wall:.0f} | {cpu:.2f} | {rss:.1f} | {runs} |")
    if "swoop" in rows:
        print()
        for other in [t for t in tools if t != "swoop"]:
            walls = [s[0] / o[0] for s, o in zip(rows["swoop"], rows[other])]
            cpus = [s[1] / o[1] for s, o in zip(rows["swoop"], rows[other]) if o[1] > 0]
            line = f"swoop/{other}, same run: wall {statistics.median(walls):.2f}"
            if cpus:
                line += f", CPU {statistics.median(cpus):.2f}"
            print(line + f" (runs: {', '.join(f'{w:.2f}' for w in walls)})  ")


def run_tool(tool, args, work, run, listing, urls, names, digest):
    """One run of `tool` into a fresh directory; returns (wall s, CPU s, peak RSS MiB)."""
    out = os.path.join(work, f"out-{tool}-{run}")
    os.makedirs(out)
    # Beside the downloads, not inside them, as the default (~/.local/state/swoop) is.
    state = os.path.join(work, f"state-{tool}-{run}")
    if tool in ("swoop", "swoop-base"):
        cmd = [args.swoop if tool == "swoop" else args.baseline, "get", "-q", "-i", listing, "-j", "16", "--state-dir", state, "-d", out]
    elif tool == "ahc":
        cmd = [args.ahc_floor, listing, out, "16"]
    elif tool == "aria2c":
        cmd = ["aria2c", "-q", "-i", listing, "-j", "16", "--file-allocation=none", "-d", out]
    elif tool in ("curl", "curl+sync"):
        cmd = ["curl", "-s", "-f", "--parallel", "--parallel-max", "16", "--remote-name-all", "--output-dir", out] + urls
        if tool == "curl+sync":
            cmd = ["sh", "-c", 'curl "$@" && exec sync -f "$0"', out] + cmd[1:]
    else:
        raise ValueError(f"no command for the tool {tool}")
    subprocess.run(["sync"])
    wall, cpu, rss = benchlib.timed(cmd, out, f"bench-many: {tool}")
    for name in names:
        with open(os.path.join(out, name), "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != digest:
                sys.exit(f"bench-many: {tool}: {name} differs from the source")
    say(f"{tool} run {run + 1}: {wall:.2f} s, {args.count / wall:.0f} files/s")
    return (wall, cpu, rss)

if __name__ == "__main__":
    benchlib.run_main(main, "bench-many")
