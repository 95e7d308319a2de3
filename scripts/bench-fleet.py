#!/usr/bin/env python3
"""scripts/bench-fleet.py — daemons sharing one queue in PostgreSQL (issue 15's benchmark).

    python3 scripts/bench-fleet.py --swoop .build/release/swoop --nginx /usr/sbin/nginx [--files 100000] [--daemons 1,2,4]

A private PostgreSQL cluster (Debian's binaries, run as the postgres user under root, on a free port,
fsync on, pg_stat_statements loaded) and a private nginx serving `--files` files of `--size` bytes
from `--work` (put it on tmpfs to measure the fleet, not the disk). For each daemon count: a fresh
database, that many `swoop daemon --store … --node nK -j 16` (each its own state and download
directory), then `swoop add --store -i LIST` of every URL, and the time until the catalogue counts
them all completed. Printed per count: files/s (from the end of the add), PostgreSQL's CPU seconds
(the postmaster and its backends), statements per file (pg_stat_statements' calls), transactions
per file, and the claim latency as the daemons saw it (p50/p99 of their `claim` log lines).

Then the takeover: a daemon (`--lease 15`, `-j 4`) runs 4 files served at 64 KiB/s; a second daemon
with room joins; the first is killed with SIGKILL, and the time until all 4 run on the second is
printed (expected: the lease, plus up to a heartbeat, a third of it, before the second looks again).
Every output file is checked by size (and a sample by sha-256).
"""

import glob
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import benchlib


def say(message):
    print(f"bench-fleet: {message}", file=sys.stderr, flush=True)


class Postgres:
    """A private cluster; `sql()` runs a statement with psql and returns its rows as text."""

    def __init__(self, work):
        versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
        if not versions:
            sys.exit("bench-fleet: no PostgreSQL server (apt-get install postgresql)")
        self.bin = os.path.dirname(versions[-1])
        self.dir = os.path.join(work, "pg")
        os.makedirs(self.dir, exist_ok=True)
        self.password = "bench"
        self.as_postgres = os.geteuid() == 0
        with open(os.path.join(self.dir, "pwfile"), "w") as f:
            f.write(self.password + "\n")
        if self.as_postgres:
            user = pwd.getpwnam("postgres")
            for path in [self.dir, os.path.join(self.dir, "pwfile")]:
                os.chown(path, user.pw_uid, user.pw_gid)
        self.run([f"{self.bin}/initdb", "-D", f"{self.dir}/data", "-U", "swoop", "--pwfile", f"{self.dir}/pwfile",
                  "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8"])
        self.port = benchlib.free_port()
        self.process = subprocess.Popen(
            self.prefix() + [f"{self.bin}/postgres", "-D", f"{self.dir}/data", "-p", str(self.port), "-k", self.dir,
                             "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200",
                             "-c", "shared_preload_libraries=pg_stat_statements"],
            stdout=open(f"{self.dir}/log", "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if subprocess.run([f"{self.bin}/pg_isready", "-q", "-h", "127.0.0.1", "-p", str(self.port)]).returncode == 0:
                return
            time.sleep(0.1)
        sys.exit("bench-fleet: PostgreSQL did not start: " + open(f"{self.dir}/log").read()[-2000:])

    def prefix(self):
        return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] if self.as_postgres else []

    def run(self, command):
        result = subprocess.run(self.prefix() + command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"bench-fleet: {command[0]} failed: {result.stderr}")

    def env(self):
        return dict(os.environ, PGPASSWORD=self.password)

    def sql(self, statement, database="postgres"):
        result = subprocess.run([f"{self.bin}/psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "swoop", "-d", database,
                                 "-At", "-v", "ON_ERROR_STOP=1", "-c", statement], capture_output=True, text=True, env=self.env())
        if result.returncode != 0:
            sys.exit(f"bench-fleet: psql: {result.stderr}")
        return result.stdout.strip()

    def url(self, database):
        return f"postgres://swoop@127.0.0.1:{self.port}/{database}?sslmode=disable"

    def cpu_seconds(self):
        """The postmaster's and its live backends' CPU, with the children it already reaped."""
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0.0
        pid = self.process.pid
        pids = [pid] + [int(p) for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()]
        for index, p in enumerate(pids):
            try:
                fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / ticks
            if index == 0:
                total += (int(fields[13]) + int(fields[14])) / ticks
        return total

    def stop(self):
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start_daemon(swoop, pg, database, work, name, extra=()):
    root = os.path.join(work, name)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "out"))
    log = open(os.path.join(root, "log"), "w")
    process = subprocess.Popen(
        [swoop, "daemon", "--listen", "127.0.0.1:0", "--state-dir", os.path.join(root, "state"), "-d", os.path.join(root, "out"),
         "--store", pg.url(database), "--node", name, "-j", "16", "--log-level", "debug", *extra],
        stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=pg.env())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if f"node {name} of the fleet" in open(os.path.join(root, "log")).read():
            return process, root
        if process.poll() is not None:
            break
        time.sleep(0.05)
    sys.exit(f"bench-fleet: daemon {name} did not start: " + open(os.path.join(root, "log")).read()[-2000:])


def stop_daemons(daemons):
    for process, _ in daemons:
        process.send_signal(signal.SIGTERM)
    for process, _ in daemons:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def claim_latencies(roots):
    values = []
    for root in roots:
        for line in open(os.path.join(root, "log"), errors="replace"):
            if " claim " in line or line.rstrip().endswith(" claim"):
                match = re.search(r"ms=([0-9.]+)", line)
                if match:
                    values.append(float(match.group(1)))
    return values


def percentile(values, fraction):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run_count(args, pg, urls_file, count, files, size):
    database = f"fleet{count}"
    pg.sql(f"CREATE DATABASE {database}")
    pg.sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", database)
    daemons = [start_daemon(args.swoop, pg, database, args.work, f"n{index}") for index in range(count)]
    pg.sql("SELECT pg_stat_statements_reset()", database)
    commits_before = int(pg.sql(f"SELECT xact_commit FROM pg_stat_database WHERE datname = '{database}'"))
    cpu_before = pg.cpu_seconds()
    started = time.monotonic()
    add = subprocess.run([args.swoop, "add", "-q", "--store", pg.url(database), "-i", urls_file], env=pg.env(), capture_output=True, text=True)
    if add.returncode != 0:
        sys.exit(f"bench-fleet: swoop add failed: {add.stderr[-2000:]}")
    added = time.monotonic()
    deadline = added + args.timeout
    done = 0
    while time.monotonic() < deadline:
        done = int(pg.sql("SELECT count(*) FROM swoop_downloads WHERE state = 'completed'", database))
        if done >= files:
            break
        # Counting 100,000 rows costs the server about 25 ms: once a second is 2.5% of a core.
        time.sleep(1)
    finished = time.monotonic()
    cpu = pg.cpu_seconds() - cpu_before
    calls = int(float(pg.sql("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements", database) or 0))
    commits = int(pg.sql(f"SELECT xact_commit FROM pg_stat_database WHERE datname = '{database}'")) - commits_before
    stop_daemons(daemons)
    if done < files:
        sys.exit(f"bench-fleet: {count} daemon(s): only {done} of {files} completed in {args.timeout} s")
    written = 0
    for _, root in daemons:
        for path in glob.glob(os.path.join(root, "out", "*")):
            if not path.endswith(".swoop"):
                if os.path.getsize(path) != size:
                    sys.exit(f"bench-fleet: {path} has {os.path.getsize(path)} bytes, not {size}")
                written += 1
    if written != files:
        sys.exit(f"bench-fleet: {written} files written for {files} downloads")
    latencies = claim_latencies([root for _, root in daemons])
    return {
        "daemons": count, "add": added - started, "wall": finished - added, "files_per_s": files / (finished - added),
        "pg_cpu": cpu, "calls_per_file": calls / files, "commits_per_file": commits / files,
        "claims": len(latencies), "p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99),
    }


def takeover(args, pg, nginx_port):
    """One daemon runs 4 slow downloads; a second, with room, joins; the first is killed."""
    database = "takeover"
    pg.sql(f"CREATE DATABASE {database}")
    lease = 15
    first = start_daemon(args.swoop, pg, database, args.work, "t0", extra=["--lease", str(lease), "-j", "4"])
    urls = [f"http://127.0.0.1:{nginx_port}/slow/s{index}.bin" for index in range(4)]
    add = subprocess.run([args.swoop, "add", "-q", "--store", pg.url(database)] + urls, env=pg.env(), capture_output=True, text=True)
    if add.returncode != 0:
        sys.exit(f"bench-fleet: swoop add failed: {add.stderr}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        held = pg.sql("SELECT count(*) FROM swoop_downloads WHERE state = 'active' AND node = 't0' AND completed_bytes > 0", database)
        if int(held) == 4:
            break
        time.sleep(0.1)
    second = start_daemon(args.swoop, pg, database, args.work, "t1", extra=["--lease", str(lease), "-j", "8"])
    first[0].kill()
    killed = time.monotonic()
    moved = None
    while time.monotonic() < killed + 120:
        running = int(pg.sql("SELECT count(*) FROM swoop_downloads WHERE node = 't1' AND state IN ('active', 'completed')", database))
        if running == 4:
            moved = time.monotonic() - killed
            break
        time.sleep(0.05)
    stop_daemons([second])
    return {"held": 4, "lease": lease, "moved": moved}


def main():
    parser = benchlib.argument_parser(__doc__)
    parser.add_argument("--swoop", required=True)
    parser.add_argument("--nginx", required=True)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--daemons", default="1,2,4")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--work")
    parser.add_argument("--no-takeover", action="store_true")
    args = parser.parse_args()
    args.work = args.work or tempfile.mkdtemp(prefix="bench-fleet-")
    www = os.path.join(args.work, "www")
    os.makedirs(os.path.join(www, "slow"), exist_ok=True)
    say(f"writing {args.files} files of {args.size} bytes to {www}")
    payload = os.urandom(args.size)
    for index in range(args.files):
        with open(os.path.join(www, f"f{index}.bin"), "wb") as f:
            f.write(payload)
    for index in range(4):
        benchlib.write_random(os.path.join(www, "slow", f"s{index}.bin"), 4 << 20)
    pg = Postgres(args.work)
    nginx, port, _ = benchlib.start_nginx(
        args.nginx, args.work, label="bench-fleet",
        server=f"root {www};\n        location /slow/ {{ limit_rate 64k; }}",
    )
    urls_file = os.path.join(args.work, "urls.txt")
    with open(urls_file, "w") as f:
        for index in range(args.files):
            f.write(f"http://127.0.0.1:{port}/f{index}.bin\n")
    try:
        results = []
        for count in [int(c) for c in args.daemons.split(",")]:
            say(f"{count} daemon(s), {args.files} files")
            results.append(run_count(args, pg, urls_file, count, args.files, args.size))
            say(f"{results[-1]}")
        print(f"\n### {args.files} files of {args.size} bytes, daemons with -j 16 each, one PostgreSQL, this machine ({os.cpu_count()} cores)\n")
        print("| daemons | add s | until all completed s | files/s | PostgreSQL CPU s | statements per file | transactions per file | claims | claim p50 ms | claim p99 ms |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in results:
            print(f"| {r['daemons']} | {r['add']:.2f} | {r['wall']:.2f} | {r['files_per_s']:.0f} | {r['pg_cpu']:.2f} | {r['calls_per_file']:.2f} | "
                  f"{r['commits_per_file']:.2f} | {r['claims']} | {r['p50']:.2f} | {r['p99']:.2f} |")
        if not args.no_takeover:
            result = takeover(args, pg, port)
            moved = f"{result['moved']:.2f} s" if result["moved"] is not None else "not within 120 s"
            print(f"\nTakeover: SIGKILL of a daemon running {result['held']} downloads (lease {result['lease']} s): all running on the other after {moved}.")
    finally:
        benchlib.stop_nginx(nginx)
        pg.stop()


if __name__ == "__main__":
    benchlib.run_main(main, "bench-fleet")
