#!/usr/bin/env python3
"""scripts/bench-daemon.py — the daemon under an RPC load (issue 12's benchmark), beside aria2c.

Run by scripts/bench (BENCH_SUITES="daemon" runs only this part), or directly:

    python3 scripts/bench-daemon.py --swoop .build/release/swoop --nginx /usr/sbin/nginx [--count 10000] [--runs 3]

For each tool in turn (alternating, `--runs` times): a daemon with 16 downloads at once (`-j 16`,
state and downloads under `--work`, on disk by default) and an RPC secret; `--count` downloads added
over RPC in JSON-RPC batches of 500 `addUri` calls (each its own `out`), from a private nginx whose
`limit_rate 16k` keeps 16 of them transferring and the rest waiting throughout. Then, with one client
on one keep-alive connection: `tellActive` in a loop for `--seconds`, then `tellWaiting(0, 1000)` for
`--seconds` (latency p50/p99, requests per second), and the daemon's RSS and CPU over 5 quiet
seconds while it waits. The daemons are `swoop daemon` and `aria2c --enable-rpc`. Prints a Markdown
table of medians and same-run ratios on stdout; progress on stderr.
"""

import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import benchlib

SECRET = "bench-secret"
BATCH = 500


def say(message):
    print(f"bench-daemon: {message}", file=sys.stderr, flush=True)


class RPC:
    """JSON-RPC over one keep-alive HTTP connection."""

    def __init__(self, port):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def post(self, payload):
        body = json.dumps(payload).encode()
        self.connection.request("POST", "/jsonrpc", body=body, headers={"Content-Type": "application/json"})
        response = self.connection.getresponse()
        data = response.read()
        return json.loads(data)

    def call(self, method, *params):
        reply = self.post({"jsonrpc": "2.0", "id": 1, "method": method, "params": [f"token:{SECRET}", *params]})
        if "error" in reply:
            sys.exit(f"bench-daemon: {method} failed: {reply['error']}")
        return reply["result"]


def process_stats(pid):
    """(RSS in MiB, CPU seconds) of a process, from /proc."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return rss, (int(fields[11]) + int(fields[12])) / ticks


def start_daemon(tool, swoop, work):
    shutil.rmtree(work, ignore_errors=True)
    downloads = os.path.join(work, "downloads")
    os.makedirs(downloads)
    port = benchlib.free_port()
    if tool == "swoop":
        cmd = [swoop, "daemon", "--listen", f"127.0.0.1:{port}", "--secret", SECRET, "-d", downloads, "-j", "16",
               "--state-dir", os.path.join(work, "state"), "--log-level", "error"]
    else:
        cmd = ["aria2c", "--enable-rpc", f"--rpc-listen-port={port}", f"--rpc-secret={SECRET}", f"--dir={downloads}",
               "--max-concurrent-downloads=16", "--file-allocation=none", "--no-conf", "--quiet",
               "--rpc-max-request-size=16M", "--max-download-result=100000"]
    process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            rpc = RPC(port)
            rpc.call("aria2.getVersion")
            return process, rpc
        except (OSError, http.client.HTTPException):
            time.sleep(0.05)
    process.kill()
    sys.exit(f"bench-daemon: {tool} did not start: {process.stderr.read().decode()[-2000:]}")


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else float("nan")


def cpu_over(pid, seconds):
    """The share of a core process `pid` used over the next `seconds`."""
    _, before = process_stats(pid)
    time.sleep(seconds)
    _, after = process_stats(pid)
    return (after - before) / seconds


def hammer(rpc, method, params, seconds):
    latencies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        rpc.call(method, *params)
        latencies.append(time.perf_counter() - started)
    return {
        "p50": percentile(latencies, 0.5) * 1000,
        "p99": percentile(latencies, 0.99) * 1000,
        "rps": len(latencies) / seconds,
    }


def add_many(rpc, url, count, tool="swoop"):
    """Adds `count` downloads of `url` (`?n=N`, each its own `out`) in JSON-RPC batches of BATCH."""
    for first in range(0, count, BATCH):
        batch = [{"jsonrpc": "2.0", "id": n, "method": "aria2.addUri",
                  "params": [f"token:{SECRET}", [f"{url}?n={n}"], {"out": f"f{n}.bin"}]}
                 for n in range(first, min(count, first + BATCH))]
        replies = rpc.post(batch)
        failed = [r for r in replies if "error" in r]
        if failed:
            sys.exit(f"bench-daemon: {tool}: addUri failed: {failed[0]['error']}")


def serve_slow_file(nginx, work, label):
    """A 1 MiB file from a private nginx at `limit_rate 16k` (16 downloads of it stay transferring):
    (nginx process, the file's URL)."""
    os.makedirs(os.path.join(work, "www"), exist_ok=True)
    benchlib.write_random(os.path.join(work, "www", "f.bin"), 1 << 20)
    process, port, _ = benchlib.start_nginx(nginx, os.path.join(work, "nginx"), label=label,
                                            server=f"root {work}/www;\n        limit_rate 16k;")
    return process, f"http://127.0.0.1:{port}/f.bin"


def measure(tool, swoop, url, count, seconds, work):
    process, rpc = start_daemon(tool, swoop, work)
    try:
        started = time.monotonic()
        add_many(rpc, url, count, tool)
        add = time.monotonic() - started
        stat = rpc.call("aria2.getGlobalStat")
        if int(stat["numActive"]) + int(stat["numWaiting"]) != count:
            sys.exit(f"bench-daemon: {tool}: {stat} after adding {count}")
        time.sleep(1)
        idle_cpu = cpu_over(process.pid, 5)
        rss, _ = process_stats(process.pid)
        active = hammer(rpc, "aria2.tellActive", [], seconds)
        waiting = hammer(rpc, "aria2.tellWaiting", [0, 1000], seconds)
        if len(rpc.call("aria2.tellActive")) != 16 or len(rpc.call("aria2.tellWaiting", 0, 1000)) != min(1000, count - 16):
            sys.exit(f"bench-daemon: {tool}: expected 16 active and {min(1000, count - 16)} waiting listed")
        peak_rss, _ = process_stats(process.pid)
        return {"add": add, "rss": rss, "peak_rss": max(rss, peak_rss), "idle_cpu": idle_cpu,
                "active": active, "waiting": waiting}
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def main():
    parser = benchlib.argument_parser(__doc__)
    parser.add_argument("--swoop", required=True)
    parser.add_argument("--nginx", required=True)
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="bench-daemon-", dir=os.path.expanduser("~"))
    nginx, url = serve_slow_file(args.nginx, work, "bench-daemon")
    results = {"swoop": [], "aria2c": []}
    try:
        for run in range(args.runs):
            for tool in (("swoop", "aria2c") if run % 2 == 0 else ("aria2c", "swoop")):
                r = measure(tool, os.path.abspath(args.swoop), url, args.count, args.seconds, os.path.join(work, tool))
                results[tool].append(r)
                say(f"run {run + 1} {tool}: {args.count} added in {r['add']:.2f} s; tellActive p50 {r['active']['p50']:.2f} ms "
                    f"p99 {r['active']['p99']:.2f} ms {r['active']['rps']:.0f}/s; tellWaiting(0,1000) p50 {r['waiting']['p50']:.1f} ms "
                    f"p99 {r['waiting']['p99']:.1f} ms {r['waiting']['rps']:.0f}/s; RSS {r['rss']:.1f} MiB (peak {r['peak_rss']:.1f}), "
                    f"CPU {r['idle_cpu'] * 100:.1f}% while waiting")
    finally:
        benchlib.stop_nginx(nginx)

    def med(tool, key, sub=None):
        return statistics.median(r[key][sub] if sub else r[key] for r in results[tool])

    print(f"\n### {args.count} downloads over RPC, 16 transferring ({args.runs} runs each, alternating; work dir {work})\n")
    print("| tool | add s | tellActive p50 ms | p99 ms | req/s | tellWaiting(0,1000) p50 ms | p99 ms | req/s | RSS MiB | peak RSS MiB | CPU while waiting |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for tool in results:
        print(f"| {tool} | {med(tool, 'add'):.2f} | {med(tool, 'active', 'p50'):.2f} | {med(tool, 'active', 'p99'):.2f} | "
              f"{med(tool, 'active', 'rps'):.0f} | {med(tool, 'waiting', 'p50'):.1f} | {med(tool, 'waiting', 'p99'):.1f} | "
              f"{med(tool, 'waiting', 'rps'):.0f} | {med(tool, 'rss'):.1f} | {med(tool, 'peak_rss'):.1f} | {med(tool, 'idle_cpu') * 100:.1f}% |")
    ratios = [s["active"]["rps"] / a["active"]["rps"] for s, a in zip(results["swoop"], results["aria2c"])]
    print(f"\nswoop/aria2c tellActive requests/s, same run: median {statistics.median(ratios):.2f} "
          f"(runs: {', '.join(f'{r:.2f}' for r in ratios)})")
    ratios = [s["waiting"]["rps"] / a["waiting"]["rps"] for s, a in zip(results["swoop"], results["aria2c"])]
    print(f"swoop/aria2c tellWaiting(0,1000) requests/s, same run: median {statistics.median(ratios):.2f} "
          f"(runs: {', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    benchlib.run_main(main, "bench-daemon")
