#!/usr/bin/env python3
"""scripts/bench-ratelimit.py — how close `--limit-rate` and `--max-overall-limit` hold their rate
(issue 4 item 6: "a token bucket accurate to ±5% over 10 s"). A measurement, not a test.

    swift build -c release --product swoop
    python3 scripts/bench-ratelimit.py --swoop .build/release/swoop --nginx /usr/sbin/nginx [--rate 5M]

A private nginx on 127.0.0.1 serves the files unthrottled. Two runs:

  - `swoop get --limit-rate RATE` of one file of 10 s worth (50 MiB at 5M);
  - `swoop get -x 8 --limit-rate RATE` of the same file over eight connections;
  - `swoop get -j 3 --max-overall-limit RATE` of three files that together are 10 s worth.

The downloaded bytes are sampled every 10 ms from the part files (and final files): the blocks they
hold, since a split download's part file is sparse at its full size from the start. The achieved
rate is bytes / time from the first byte seen to the last; the error is against the target (K, M,
G are binary, as in swoop). The wall time of the whole process (start-up, connection and
finishing included) is printed too. Prints a Markdown table on stdout; progress on stderr.
"""


import benchlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def say(message):
    print(f"bench-ratelimit: {message}", file=sys.stderr, flush=True)


def parse_rate(text):
    text = text.strip().upper()
    unit = text[-1] if text and text[-1] in UNITS else ""
    return int(float(text[: len(text) - len(unit)]) * UNITS[unit])


def start_nginx(nginx, work, files):
    """nginx serving `files` ({name: size}) from a private prefix, without any limit."""
    www = os.path.join(work, "www")
    os.makedirs(www, exist_ok=True)
    for name, size in files.items():
        benchlib.write_random(os.path.join(www, name), size)
    process, port, _ = benchlib.start_nginx(nginx, work, label="bench-ratelimit", http="sendfile on;", server=f"root {www};")
    return process, port


def size_of(directory, name):
    """The bytes written so far: the blocks the file holds (at most its size)."""
    for candidate in (name + ".swoop", name):
        try:
            status = os.stat(os.path.join(directory, candidate))
        except OSError:
            continue
        return min(status.st_size, status.st_blocks * 512)
    return 0


def run(swoop, port, work, label, names, options):
    """Runs one `swoop get`, sampling the bytes on disk; returns the figures of one table row."""
    out = os.path.join(work, label, "out")
    state = os.path.join(work, label, "state")
    os.makedirs(out)
    urls = [f"http://127.0.0.1:{port}/{name}" for name in names]
    command = [swoop, "get", "-q", "--state-dir", state, "-d", out, "-j", str(len(names))] + options + urls
    say(" ".join(command))
    start = time.monotonic()
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    first = None
    per_file_first = {}
    samples = []
    while True:
        now = time.monotonic()
        sizes = {name: size_of(out, name) for name in names}
        total = sum(sizes.values())
        if total and first is None:
            first = (now, total)
        for name, size in sizes.items():
            if size and name not in per_file_first:
                per_file_first[name] = now
        samples.append((now, total, sizes))
        if process.poll() is not None:
            break
        time.sleep(0.01)
    wall = time.monotonic() - start
    if process.returncode != 0:
        sys.exit(f"bench-ratelimit: swoop exited with {process.returncode}")
    final_total = samples[-1][1]
    # The last sample at which the byte count changed: the end of the transfer.
    last = next(s for s in samples if s[1] == final_total)
    return {
        "bytes": final_total,
        "wall": wall,
        "transfer": last[0] - first[0],
        "rate": (final_total - first[1]) / (last[0] - first[0]),
        "files": {name: (size_of(out, name), per_file_first.get(name)) for name in names},
        "samples": samples,
    }


def window_rate(samples, seconds):
    """The lowest and highest rate over any `seconds` window of the samples (None if shorter)."""
    rates = []
    j = 0
    for i, (t, total, _) in enumerate(samples):
        while j < len(samples) and samples[j][0] - t < seconds:
            j += 1
        if j == len(samples):
            break
        rates.append((samples[j][1] - total) / (samples[j][0] - t))
    return (min(rates), max(rates)) if rates else None


def main():
    parser = benchlib.argument_parser(__doc__)
    parser.add_argument("--swoop", default=".build/release/swoop")
    parser.add_argument("--nginx", default="/usr/sbin/nginx")
    parser.add_argument("--rate", default="5M", help="the limit, as swoop takes it (default 5M)")
    parser.add_argument("--seconds", type=float, default=10, help="how long each run should take at the limit")
    args = parser.parse_args()
    target = parse_rate(args.rate)
    total = int(target * args.seconds)
    third = total // 3
    files = {"single.bin": total, "part1.bin": third, "part2.bin": third, "part3.bin": total - 2 * third}
    work = tempfile.mkdtemp(prefix="swoop-bench-ratelimit-")
    nginx, port = start_nginx(args.nginx, work, files)
    try:
        rows = [
            ("--limit-rate", run(args.swoop, port, work, "per", ["single.bin"], ["--limit-rate", args.rate])),
            ("--limit-rate, -x 8", run(
                args.swoop, port, work, "split", ["single.bin"], ["--limit-rate", args.rate, "-x", "8", "--min-split-size", "1M"]
            )),
            ("--max-overall-limit, 3 at once", run(
                args.swoop, port, work, "overall", ["part1.bin", "part2.bin", "part3.bin"], ["--max-overall-limit", args.rate]
            )),
        ]
    finally:
        benchlib.stop_nginx(nginx)
        shutil.rmtree(work, ignore_errors=True)

    mib = 1 << 20
    print(f"target {args.rate} = {target / mib:.3f} MiB/s, {total / mib:.1f} MiB per run (issue: ±5% over 10 s)\n")
    print("| run | bytes | first→last byte | achieved | error vs target | process wall time | wall-time rate |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, r in rows:
        error = (r["rate"] / target - 1) * 100
        wall_rate = r["bytes"] / r["wall"]
        print(
            f"| {label} | {r['bytes'] / mib:.1f} MiB | {r['transfer']:.2f} s | {r['rate'] / mib:.3f} MiB/s | "
            f"{error:+.2f}% | {r['wall']:.2f} s | {wall_rate / mib:.3f} MiB/s ({(wall_rate / target - 1) * 100:+.2f}%) |"
        )
    print()
    for label, r in rows:
        window = window_rate(r["samples"], 5)
        if window:
            low, high = window
            print(f"{label}: any 5 s window between {low / mib:.3f} and {high / mib:.3f} MiB/s "
                  f"({(low / target - 1) * 100:+.1f}% .. {(high / target - 1) * 100:+.1f}%)")
    overall = rows[-1][1]
    shares = ", ".join(f"{name} {size / mib:.1f} MiB" for name, (size, _) in overall["files"].items())
    print(f"--max-overall-limit files: {shares}")


if __name__ == "__main__":
    benchlib.run_main(main, "bench-ratelimit")
