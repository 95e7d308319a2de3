#!/usr/bin/env python3
"""scripts/bench-segments.py — one file over several connections (issue 4, benchmark (b) and (d)).

Run by scripts/bench (BENCH_SUITES="segments" runs only this part), or directly:

    python3 scripts/bench-segments.py --swoop .build/release/swoop --nginx /usr/sbin/nginx [--size 256M] [--runs 1]

A private nginx on 127.0.0.1 serves one random file with `limit_rate 20m` per connection. For 1, 4
and 8 connections it times Swoop (`-x N`), `aria2c -x N -s N` and `axel -n N` (each output checked
by sha-256), then kills each tool with SIGKILL halfway through an 8-connection download (curl: one
connection, resumed with `curl -C -`), runs it again, and counts from nginx's access log the body bytes the server sent in all, minus the file's
size: what was fetched twice (--crash-runs times each, 3 unless set: one run says little, the bytes in
flight at the kill vary). The uninterrupted runs report the same count: bytes a split made the server
send twice. Prints Markdown tables on stdout; progress on stderr.

Beside each tool's rate, the rate nginx served each of its requests at (body bytes over nginx's
`$request_time`, the median request of the median run): `limit_rate` is not exact (one loaded day it
served every request of Swoop and of axel alike at 16.8–17.4 MiB/s, not 20, and no client could
reach 8 × 20 MiB/s). "vs axel" is the same-run ratio to axel. The work directory decides what is
measured: on tmpfs (`--work /dev/shm/…`) the engine; on a disk Swoop's time also holds its final
flush (0.39 s of `fsync` for 256 MiB on this machine's /tmp), which aria2c and axel do not make.
"""


import benchlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def say(message):
    print(f"bench-segments: {message}", file=sys.stderr, flush=True)


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    if text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def start_nginx(nginx, work, rate):
    log = os.path.join(work, "nginx", "access.log")
    process, port, _ = benchlib.start_nginx(
        nginx, work, label="bench-segments",
        http=f"""log_format bytes '$request_uri $status $body_bytes_sent $request_time';
    access_log {log} bytes;
    sendfile on;""",
        server=f"root {work}/www;\n        limit_rate {rate};",
    )
    return process, port, log


def sent_bytes(log):
    total = 0
    try:
        with open(log) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2].isdigit():
                    total += int(parts[2])
    except OSError:
        pass
    return total


def request_rate(log):
    """The rate (MiB/s) nginx served the median request of `log` at: body bytes over `$request_time`
    (requests of at least 1 MiB and 10 ms; a stolen remainder's last request can be tiny)."""
    rates = []
    try:
        with open(log) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 4 and parts[2].isdigit():
                    sent, seconds = int(parts[2]), float(parts[3])
                    if sent >= 1 << 20 and seconds >= 0.01:
                        rates.append(sent / seconds / (1 << 20))
    except (OSError, ValueError):
        pass
    return statistics.median(rates) if rates else float("nan")


def reopen_log(log):
    """Empties nginx's access log and has nginx reopen it (SIGUSR1)."""
    open(log, "w").close()
    os.kill(int(open(os.path.join(os.path.dirname(log), "nginx.pid")).read()), signal.SIGUSR1)
    time.sleep(0.2)


def command(tool, connections, url, out_dir, state):
    if tool == "swoop":
        return [SWOOP, "get", "-q", "-x", str(connections), "--min-split-size", "1M", "--state-dir", state, "-d", out_dir, url]
    if tool == "aria2c":
        return ["aria2c", "-q", f"-x{connections}", f"-s{connections}", "-k1M", "--file-allocation=none",
                "--allow-overwrite=false", "-d", out_dir, url]
    if tool == "axel":
        return ["axel", "-q", "-n", str(connections), "-o", out_dir, url]
    if tool == "curl":
        # One connection (curl does not split a file); `-C -` continues from the file's length.
        return ["curl", "-s", "-f", "-C", "-", "-o", os.path.join(out_dir, url.rsplit("/", 1)[-1]), url]
    raise ValueError(tool)




def measure(tool, connections, url, name, work, expected, log):
    reopen_log(log)
    out_dir = os.path.join(work, "out")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    state = os.path.join(work, "state")
    shutil.rmtree(state, ignore_errors=True)
    cmd = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", os.path.join(work, "time.txt")] + command(tool, connections, url, out_dir, state)
    subprocess.run(["sync"])
    started = time.monotonic()
    result = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=out_dir)
    wall = time.monotonic() - started
    if result.returncode != 0:
        sys.exit(f"bench-segments: {tool} -x {connections} failed: {result.stderr[-2000:]}")
    got = benchlib.sha256_file(os.path.join(out_dir, name))
    if got != expected:
        sys.exit(f"bench-segments: {tool} -x {connections}: sha-256 {got} differs from the source's {expected}")
    _, user, system, rss = open(os.path.join(work, "time.txt")).read().split()
    time.sleep(0.2)  # nginx writes the log line when the response ends
    return wall, float(user) + float(system), int(rss) / 1024, request_rate(log), sent_bytes(log) - os.path.getsize(os.path.join(out_dir, name))


def crash(tool, connections, url, name, work, log, size, expected):
    """SIGKILL halfway, rerun, and count what nginx sent twice."""
    out_dir = os.path.join(work, "out")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    state = os.path.join(work, "state")
    shutil.rmtree(state, ignore_errors=True)
    reopen_log(log)
    cmd = command(tool, connections, url, out_dir, state)
    process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=out_dir)
    # Wait until about half the file is on disk (part files count), then SIGKILL.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        on_disk = sum(os.stat(os.path.join(out_dir, f)).st_blocks * 512 for f in os.listdir(out_dir))
        if on_disk >= size // 2:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, cwd=out_dir, timeout=600)
    time.sleep(0.5)  # nginx writes the log line when the response ends
    path = os.path.join(out_dir, name)
    exact = os.path.exists(path) and benchlib.sha256_file(path) == expected
    return sent_bytes(log) - size, exact


def main():
    global SWOOP
    parser = benchlib.argument_parser(__doc__)
    parser.add_argument("--swoop", required=True)
    parser.add_argument("--nginx", required=True)
    parser.add_argument("--size", default="256M")
    parser.add_argument("--rate", default="20m")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--connections", default="1,4,8")
    parser.add_argument("--crash-runs", type=int, default=3, help="SIGKILL runs per tool (3)")
    parser.add_argument("--work")
    args = parser.parse_args()
    benchlib.prepare_binaries(args.swoop, "aria2c", "axel", "curl")
    SWOOP = args.swoop
    size = parse_size(args.size)
    work = args.work or tempfile.mkdtemp(prefix="swoop-bench-segments.")
    os.makedirs(os.path.join(work, "www"), exist_ok=True)
    name = "segments.bin"
    source = os.path.join(work, "www", name)
    if not os.path.exists(source) or os.path.getsize(source) != size:
        say(f"creating {source} ({size} bytes)")
        benchlib.write_random(source, size)
    expected = benchlib.sha256_file(source)
    nginx, port, log = start_nginx(args.nginx, work, args.rate)
    url = f"http://127.0.0.1:{port}/{name}"
    tools = ["swoop", "aria2c", "axel"]
    rows = []
    try:
        for connections in [int(c) for c in args.connections.split(",")]:
            for tool in tools:
                results = sorted(measure(tool, connections, url, name, work, expected, log) for _ in range(args.runs))
                wall = statistics.median(r[0] for r in results)
                cpu = statistics.median(r[1] for r in results)
                rss = statistics.median(r[2] for r in results)
                served = results[len(results) // 2][3]
                extra = statistics.median(r[4] for r in results)
                say(f"{tool} x{connections}: {wall:.2f} s, {size / 1e6 / wall:.0f} MB/s, nginx served each request at {served:.1f} MiB/s, {extra:.0f} bytes beyond the file")
                rows.append((connections, tool, wall, size / 1e6 / wall, cpu, rss, served, extra))
        crashes = []
        for tool, connections in [("swoop", 8), ("aria2c", 8), ("axel", 8), ("curl", 1)]:
            runs = []
            for _ in range(max(1, args.crash_runs)):
                resent, exact = crash(tool, connections, url, name, work, log, size, expected)
                say(f"{tool} crash x{connections}: {resent} bytes sent twice, byte-exact {exact}")
                runs.append((resent, exact))
            crashes.append((tool, connections, [r for r, _ in runs], all(e for _, e in runs)))
    finally:
        benchlib.stop_nginx(nginx)

    print(f"### {size >> 20} MiB from nginx with `limit_rate {args.rate}` per connection ({args.runs} run(s), median)")
    print()
    print("| connections | tool | wall s | MB/s | vs 8×20 MB/s target | nginx's rate per request MiB/s | vs aria2c | vs axel | CPU s | CPU s/GiB | peak RSS MiB | bytes sent beyond the file |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for connections, tool, wall, mbps, cpu, rss, served, extra in rows:
        aria = next(r for r in rows if r[0] == connections and r[1] == "aria2c")
        axel = next(r for r in rows if r[0] == connections and r[1] == "axel")
        target = mbps / (0.9 * connections * 20 * 1.048576)
        print(f"| {connections} | {tool} | {wall:.2f} | {mbps:.1f} | {target:.2f} | {served:.1f} | {mbps / aria[3]:.2f} | {mbps / axel[3]:.2f} | {cpu:.2f} | "
              f"{cpu / (size / (1 << 30)):.2f} | {rss:.1f} | {extra:.0f} |")
    print()
    print(f"SIGKILL halfway through the download, then the same command again (curl: `curl -C -`, one connection), {args.crash_runs} time(s) each:")
    print()
    print("| tool | connections | bytes sent twice (each run) | MiB per connection (median) | MiB per connection (most) | byte-exact |")
    print("| --- | ---: | --- | ---: | ---: | --- |")
    for tool, connections, resent, exact in crashes:
        per = [r / connections / (1 << 20) for r in resent]
        print(f"| {tool} | {connections} | {', '.join(str(r) for r in resent)} | {statistics.median(per):.2f} | {max(per):.2f} | {'yes' if exact else 'NO'} |")
    print()
    print("(vs 8×20 MB/s target: MB/s ÷ (0.9 × connections × 20 MiB/s); nginx's `20m` is 20 MiB/s. The target is ≥ 1.00 at 8 connections.)")


SWOOP = ""

if __name__ == "__main__":
    benchlib.run_main(main, "bench-segments")
