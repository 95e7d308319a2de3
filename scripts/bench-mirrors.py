#!/usr/bin/env python3
"""scripts/bench-mirrors.py — one file from four mirrors (issue 11's benchmark).

Run by scripts/bench (BENCH_SUITES="mirrors" runs only this part), or directly:

    python3 scripts/bench-mirrors.py --swoop .build/release/swoop --nginx /usr/sbin/nginx [--size 256M] [--runs 5]

Four private nginx servers, on 127.0.0.2 to 127.0.0.5, serve the same random file at `--rate` (20m:
20 MiB/s) each; each tool uses one connection per server, so at most 80 MiB/s in all.

Two ways to throttle (`--shaper`):
- `nginx` (default): nginx's `limit_rate`. nginx waits `bytes sent / rate` after each send, counted
  from before the send, so the time a send takes adds to every period. A send takes longer when the
  client's receive window is wide open (the kernel passes more of it to the client inside the call):
  a client that reads more slowly is served slightly faster (a plain Python reader: 3.118 s for
  64 MiB with a 256 KiB receive buffer, 3.131 s with the kernel's autotuned one).
- `kernel`: a token bucket in the kernel (tc HTB, 20 MiB/s per mirror address) on the loopback of a
  network namespace of its own (`unshare -n`, root), and nginx unthrottled: a 20 MiB/s link,
  whatever the client does. Swoop (`swoop get --mirror U2 --mirror U3 --mirror U4 U1`, one
connection per source) and `aria2c -s4 U1 U2 U3 U4` (aria2's one connection per server) download it
alternately,
`--runs` times each, into `--work` (put it on tmpfs to measure the engine). Every output is checked
by sha-256. Prints a Markdown table (medians of wall time, throughput, CPU seconds, peak RSS, and
the same-run ratio) on stdout; progress on stderr.
"""

import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import benchlib


def say(message):
    print(f"bench-mirrors: {message}", file=sys.stderr, flush=True)


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def command(tool, swoop, urls, out_dir, state):
    if tool == "swoop":
        mirrors = [arg for url in urls[1:] for arg in ("--mirror", url)]
        return [swoop, "get", "-q", "--min-split-size", "1M", "--state-dir", state, "-d", out_dir] + mirrors + [urls[0]]
    # aria2's defaults: -x1 (one connection per server), -s5 (a split of five: with four
    # servers, one connection each).
    return ["aria2c", "-q", "-s4", "-k1M", "--file-allocation=none", "--allow-overwrite=false", "-d", out_dir] + urls


def measure(tool, swoop, urls, name, work, expected, size):
    out_dir = os.path.join(work, "out")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    state = os.path.join(work, "state")
    shutil.rmtree(state, ignore_errors=True)
    timing = os.path.join(work, "time.txt")
    cmd = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", timing] + command(tool, swoop, urls, out_dir, state)
    started = time.monotonic()
    result = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=out_dir, timeout=600)
    wall = time.monotonic() - started
    if result.returncode != 0:
        sys.exit(f"bench-mirrors: {tool} failed: {result.stderr[-2000:]}")
    got = benchlib.sha256_file(os.path.join(out_dir, name))
    if got != expected:
        sys.exit(f"bench-mirrors: {tool}: sha-256 {got} differs from the source's {expected}")
    _, user, system, rss = open(timing).read().split()
    return {"wall": wall, "mibps": size / wall / (1 << 20), "cpu": float(user) + float(system), "rss": int(rss) / 1024}


def shape_loopback(rate):
    """In a fresh network namespace: 127.0.0.2 to .5 send at `rate` bytes/s each (tc HTB on lo)."""
    bits = f"{rate * 8}bit"
    commands = [
        "ip link set lo up",
        "tc qdisc add dev lo root handle 1: htb default 99",
        "tc class add dev lo parent 1: classid 1:99 htb rate 100gbit quantum 200000",
    ]
    for index in range(2, 6):
        commands += [
            f"tc class add dev lo parent 1: classid 1:{index} htb rate {bits} ceil {bits} burst 256k cburst 256k quantum 65536",
            f"tc qdisc add dev lo parent 1:{index} handle {index}0: pfifo limit 1000",
            f"tc filter add dev lo protocol ip parent 1: prio 1 u32 match ip src 127.0.0.{index}/32 flowid 1:{index}",
        ]
    for command in commands:
        result = subprocess.run(shlex.split(command), capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"bench-mirrors: `{command}` failed: {result.stderr.strip()}")


def main():
    parser = benchlib.argument_parser(__doc__)
    parser.add_argument("--swoop", required=True)
    parser.add_argument("--nginx", required=True)
    parser.add_argument("--size", default="256M")
    parser.add_argument("--rate", default="20m")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work")
    parser.add_argument("--shaper", choices=["nginx", "kernel"], default="nginx")
    args = parser.parse_args()
    benchlib.prepare_binaries(args.swoop, "aria2c")
    size = parse_size(args.size)
    if args.shaper == "kernel" and os.environ.get("BENCH_MIRRORS_NETNS") != "1":
        # Again, inside a network namespace of its own, where the loopback can be shaped.
        if shutil.which("unshare") is None or shutil.which("tc") is None:
            sys.exit("bench-mirrors: --shaper kernel needs unshare (util-linux) and tc (iproute2)")
        environment = dict(os.environ, BENCH_MIRRORS_NETNS="1")
        sys.exit(subprocess.run(["unshare", "-n", sys.executable] + sys.argv, env=environment).returncode)
    if args.shaper == "kernel":
        shape_loopback(parse_size(args.rate))
    work = args.work or tempfile.mkdtemp(prefix="bench-mirrors-")
    os.makedirs(os.path.join(work, "www"), exist_ok=True)
    name = "mirrored.bin"
    source = os.path.join(work, "www", name)
    say(f"writing {size} random bytes to {source}")
    benchlib.write_random(source, size)
    expected = benchlib.sha256_file(source)
    servers = []
    try:
        for index in range(4):
            mirror_work = os.path.join(work, f"mirror{index}")
            os.makedirs(mirror_work, exist_ok=True)
            # Four hosts (127.0.0.2 to .5), so that every tool sees four servers: aria2 counts its
            # connections per host name.
            host = f"127.0.0.{index + 2}"
            process, port, _ = benchlib.start_nginx(
                args.nginx, mirror_work, label=f"bench-mirrors {index}", http="sendfile on;",
                server=f"root {work}/www;\n        limit_rate {args.rate if args.shaper == 'nginx' else 0};", host=host,
            )
            servers.append((process, host, port))
        urls = [f"http://{host}:{port}/{name}" for _, host, port in servers]
        say(f"4 mirrors at {args.rate}/s per connection ({args.shaper} throttle): {', '.join(urls)}")
        results = {"swoop": [], "aria2c": []}
        ratios = []
        for run in range(args.runs):
            pair = {}
            for tool in (("swoop", "aria2c") if run % 2 == 0 else ("aria2c", "swoop")):
                pair[tool] = measure(tool, args.swoop, urls, name, work, expected, size)
                results[tool].append(pair[tool])
                say(f"run {run + 1} {tool}: {pair[tool]['wall']:.2f} s, {pair[tool]['mibps']:.1f} MiB/s, "
                    f"{pair[tool]['cpu']:.2f} CPU s, {pair[tool]['rss']:.1f} MiB")
            ratios.append(pair["swoop"]["mibps"] / pair["aria2c"]["mibps"])
        print(f"\n### {args.size} from 4 mirrors at {args.rate}/s each, {args.shaper} throttle "
              f"({args.runs} runs each, alternating; work dir {work})\n")
        print("| tool | median wall s | median MiB/s | median CPU s | median peak RSS MiB |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for tool, runs in results.items():
            median = lambda key: statistics.median(r[key] for r in runs)
            print(f"| {tool} | {median('wall'):.3f} | {median('mibps'):.1f} | {median('cpu'):.2f} | {median('rss'):.1f} |")
        # Both tools fill the links; what tells them apart is a few milliseconds of start-up: four
        # decimals, and the same-run difference in milliseconds.
        print(f"\nswoop/aria2c throughput, same run: median {statistics.median(ratios):.4f} "
              f"(runs: {', '.join(f'{r:.4f}' for r in ratios)})")
        gaps = [(s['wall'] - a['wall']) * 1000 for s, a in zip(results['swoop'], results['aria2c'])]
        print(f"swoop - aria2c wall time, same run: median {statistics.median(gaps):+.1f} ms "
              f"(runs: {', '.join(f'{g:+.1f}' for g in gaps)})")
    finally:
        for process, _, _ in servers:
            benchlib.stop_nginx(process)


if __name__ == "__main__":
    benchlib.run_main(main, "bench-mirrors")
