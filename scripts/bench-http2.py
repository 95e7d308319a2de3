#!/usr/bin/env python3
"""scripts/bench-http2.py — HTTP/1.1 or HTTP/2 over TLS (issue 4, item 5: measure both).

Run by scripts/bench (BENCH_SUITES="http2"), or directly:

    python3 scripts/bench-http2.py --swoop .build/release/swoop --nginx /usr/sbin/nginx [--size 512M] [--count 1000]

A private nginx on 127.0.0.1 serves, over TLS with HTTP/2 enabled (a self-signed certificate made
with openssl), one large random file and COUNT files of 64 KiB. Swoop fetches both with its default
(HTTP/1.1 only) and with `--http2` (HTTP/2 when ALPN offers it), `curl --http1.1` and `curl --http2`
likewise, 16 small files at once. Every output is checked by sha-256. Prints a Markdown table: wall
time, MB/s or files/s, CPU seconds and peak RSS.
"""


import benchlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time


def say(message):
    print(f"bench-http2: {message}", file=sys.stderr, flush=True)






def main():
    parser = benchlib.argument_parser(__doc__)
    parser.add_argument("--swoop", required=True)
    parser.add_argument("--nginx", required=True)
    parser.add_argument("--size", type=int, default=512 << 20)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--work")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="swoop-bench-http2.")
    www = os.path.join(work, "www")
    os.makedirs(os.path.join(www, "small"), exist_ok=True)
    big = os.path.join(www, "big.bin")
    if not os.path.exists(big) or os.path.getsize(big) != args.size:
        benchlib.write_random(big, args.size)
    big_sha = benchlib.sha256_file(big)
    small = os.urandom(64 << 10)
    small_sha = hashlib.sha256(small).hexdigest()
    names = [f"s{i:05d}.bin" for i in range(args.count)]
    for name in names:
        with open(os.path.join(www, "small", name), "wb") as f:
            f.write(small)

    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    nginx, port, _ = benchlib.start_nginx(
        args.nginx, work, label="bench-http2", listen=" ssl http2",
        http="keepalive_requests 100000;\n    http2_max_requests 100000;",
        server=f"ssl_certificate {cert};\n        ssl_certificate_key {key};\n        root {www};",
    )
    base = f"https://127.0.0.1:{port}"
    listing = os.path.join(work, "urls.txt")
    with open(listing, "w") as f:
        f.write("\n".join(f"{base}/small/{n}" for n in names) + "\n")

    def run(label, cmd, outputs, expected):
        out = os.path.join(work, "out")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        shutil.rmtree(os.path.join(work, "state"), ignore_errors=True)
        cmd = [c.replace("{out}", out) for c in cmd]
        wall, cpu, rss = benchlib.timed(cmd, out, f"bench-http2: {label}")
        for name in outputs:
            if benchlib.sha256_file(os.path.join(out, name)) != expected:
                sys.exit(f"bench-http2: {label}: {name} differs from the source")
        say(f"{label}: {wall:.2f} s")
        return wall, cpu, rss

    state = os.path.join(work, "state")
    swoop = [args.swoop, "get", "-q", "--ca-certificate", cert, "--state-dir", state, "-d", "{out}"]
    rows = []
    try:
        for label, extra in [("swoop (HTTP/1.1)", []), ("swoop --http2", ["--http2"])]:
            wall, cpu, rss = run(label, swoop + extra + [f"{base}/big.bin"], ["big.bin"], big_sha)
            rows.append(("one file", label, wall, f"{args.size / 1e6 / wall:.0f} MB/s", cpu, rss))
        for label, flag in [("curl --http1.1", "--http1.1"), ("curl --http2", "--http2")]:
            wall, cpu, rss = run(label, ["curl", "-s", "-f", flag, "--cacert", cert, "-o", "{out}/big.bin", f"{base}/big.bin"], ["big.bin"], big_sha)
            rows.append(("one file", label, wall, f"{args.size / 1e6 / wall:.0f} MB/s", cpu, rss))
        for label, extra in [("swoop (HTTP/1.1)", []), ("swoop --http2", ["--http2"])]:
            wall, cpu, rss = run(label, swoop + extra + ["-j", "16", "-i", listing], names, small_sha)
            rows.append((f"{args.count} × 64 KiB", label, wall, f"{args.count / wall:.0f} files/s", cpu, rss))
        urls = [f"{base}/small/{n}" for n in names]
        for label, flag in [("curl --http1.1", "--http1.1"), ("curl --http2", "--http2")]:
            wall, cpu, rss = run(label, ["curl", "-s", "-f", flag, "--cacert", cert, "--parallel", "--parallel-max", "16",
                                         "--remote-name-all", "--output-dir", "{out}"] + urls, names, small_sha)
            rows.append((f"{args.count} × 64 KiB", label, wall, f"{args.count / wall:.0f} files/s", cpu, rss))
    finally:
        benchlib.stop_nginx(nginx)

    print(f"### HTTP/1.1 vs HTTP/2 over TLS (nginx on 127.0.0.1, one file of {args.size >> 20} MiB; {args.count} small files, 16 at once)")
    print()
    print("| workload | client | wall s | rate | CPU s | peak RSS MiB |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for workload, label, wall, rate, cpu, rss in rows:
        print(f"| {workload} | {label} | {wall:.2f} | {rate} | {cpu:.2f} | {rss:.1f} |")


if __name__ == "__main__":
    benchlib.run_main(main, "bench-http2")
