#!/usr/bin/env python3
"""scripts/bench-queue.py — 10,000 URLs queued from a file (issue 3's scale figures).

Run by scripts/bench (BENCH_SUITES="queue" runs only this part), or directly:

    python3 scripts/bench-queue.py --swoop .build/release/swoop --nginx /usr/sbin/nginx [--count 10000]

What it measures, against a private nginx on 127.0.0.1 that serves every /q/NAME from one
64 KiB file at 1 KiB/s (so the few active downloads stay active and everything else waits):

  - "add": wall time from starting `swoop get -i urls.txt -j 5` until all COUNT downloads are in
    its SQLite store (polled read-only through WAL every 10 ms), process start-up included;
  - "ls": wall time of `swoop ls` and of `swoop ls --json` while that process runs (median of 3),
    checking that each lists COUNT downloads;
  - memory, file descriptors and connections of the waiting process: VmRSS and VmHWM from
    /proc/PID/status, the number of open fds and of TCP sockets among them, 2 s after the adds;
  - the same memory/fd/socket figures for `aria2c -i urls.txt -j 5` holding the same queue;
  - Ctrl-C: how long `swoop` takes to exit after SIGINT, and its exit code (130 expected).

Prints a Markdown table on stdout; progress on stderr.
"""


import benchlib
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time


def say(message):
    print(f"bench-queue: {message}", file=sys.stderr, flush=True)


def start_nginx(nginx, work):
    www = os.path.join(work, "www")
    os.makedirs(www, exist_ok=True)
    with open(os.path.join(www, "one.bin"), "wb") as f:
        f.write(os.urandom(64 * 1024))
    process, port, _ = benchlib.start_nginx(
        nginx, work, label="bench-queue",
        server=f"""root {www};
        location = /ping {{ return 200 "ok\\n"; }}
        location /q/ {{ limit_rate 1k; rewrite ^ /one.bin break; }}""",
    )
    return process, port


def proc_figures(pid):
    """RSS, peak RSS (MiB), open fds and TCP sockets of a process."""
    status = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            status[key] = value.strip()
    fds = os.listdir(f"/proc/{pid}/fd")
    inodes = set()
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    tcp = 0
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                for line in f:
                    if line.split()[9] in inodes:
                        tcp += 1
        except OSError:
            pass
    kib = lambda key: int(status.get(key, "0 kB").split()[0])
    return kib("VmRSS") / 1024, kib("VmHWM") / 1024, len(fds), tcp


def stored_count(database):
    if not os.path.exists(database):
        return 0
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1) as db:
            return db.execute("SELECT count(*) FROM download").fetchone()[0]
    except sqlite3.Error:
        return 0


def main():
    parser = benchlib.argument_parser(__doc__)
    parser.add_argument("--swoop", required=True)
    parser.add_argument("--nginx", required=True)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--work")
    args = parser.parse_args()

    work = args.work or tempfile.mkdtemp(prefix="swoop-bench-queue.")
    os.makedirs(work, exist_ok=True)
    nginx, port = start_nginx(args.nginx, work)
    swoop = None
    try:
        urls = os.path.join(work, "urls.txt")
        with open(urls, "w") as f:
            for i in range(args.count):
                f.write(f"http://127.0.0.1:{port}/q/file-{i:05d}.bin\n")
        state = os.path.join(work, "state")
        out = os.path.join(work, "out")
        os.makedirs(out, exist_ok=True)
        database = os.path.join(state, "swoop.sqlite")

        say(f"queueing {args.count} URLs with swoop get -i ... -j 5")
        started = time.monotonic()
        swoop = subprocess.Popen(
            [args.swoop, "get", "-q", "-i", urls, "-j", "5", "--state-dir", state, "-d", out],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = started + 120
        while stored_count(database) < args.count:
            if time.monotonic() > deadline or swoop.poll() is not None:
                sys.exit(f"bench-queue: the downloads never all reached the store (swoop exit {swoop.poll()})")
            time.sleep(0.01)
        add_seconds = time.monotonic() - started
        say(f"all {args.count} in the store after {add_seconds:.3f} s")

        time.sleep(2)
        rss, hwm, fds, sockets = proc_figures(swoop.pid)

        def timed(arguments, check):
            times = []
            for _ in range(3):
                t0 = time.monotonic()
                result = subprocess.run([args.swoop, *arguments, "--state-dir", state], capture_output=True, text=True)
                times.append(time.monotonic() - t0)
                if result.returncode != 0 or not check(result.stdout):
                    sys.exit(f"bench-queue: swoop {' '.join(arguments)} failed: {result.stderr}")
            return statistics.median(times)

        ls_seconds = timed(["ls"], lambda text: text.count("\n") == args.count + 1)
        ls_json_seconds = timed(["ls", "--json"], lambda text: len(json.loads(text)) == args.count)

        t0 = time.monotonic()
        swoop.send_signal(signal.SIGINT)
        code = swoop.wait(timeout=60)
        stop_seconds = time.monotonic() - t0

        say("the same queue with aria2c -i ... -j 5")
        aria_dir = os.path.join(work, "aria2")
        os.makedirs(aria_dir, exist_ok=True)
        aria = subprocess.Popen(
            ["aria2c", "-q", "-i", urls, "-j", "5", "-x1", "-s1", "--file-allocation=none", "-d", aria_dir],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        time.sleep(5)
        aria_figures = proc_figures(aria.pid)
        aria.send_signal(signal.SIGINT)
        try:
            aria.wait(timeout=30)
        except subprocess.TimeoutExpired:
            aria.kill()

        print(f"### {args.count} URLs queued from a file (-j 5; all but the active ones wait)")
        print()
        print("| measure | swoop | aria2c |")
        print("| --- | ---: | ---: |")
        print(f"| add all {args.count} (process start to all in the store) | {add_seconds:.3f} s | – |")
        print(f"| `swoop ls` while they wait (median of 3) | {ls_seconds:.3f} s | – |")
        print(f"| `swoop ls --json` (median of 3) | {ls_json_seconds:.3f} s | – |")
        print(f"| RSS while waiting | {rss:.1f} MiB | {aria_figures[0]:.1f} MiB |")
        print(f"| peak RSS so far | {hwm:.1f} MiB | {aria_figures[1]:.1f} MiB |")
        print(f"| open file descriptors | {fds} | {aria_figures[2]} |")
        print(f"| TCP connections | {sockets} | {aria_figures[3]} |")
        print(f"| exit after SIGINT | {stop_seconds:.3f} s, status {code if code >= 0 else 128 - code} | – |")
    finally:
        if swoop and swoop.poll() is None:
            swoop.kill()
        benchlib.stop_nginx(nginx)


if __name__ == "__main__":
    benchlib.run_main(main, "bench-queue")
