#!/usr/bin/env python3
"""Interop test: drive an aria2-compatible JSON-RPC server through the real aria2p client.

Usage:
    python3 aria2p_interop.py --host 127.0.0.1 --port PORT --secret SECRET --dir DOWNLOAD_DIR
    python3 aria2p_interop.py --start-aria2c      # start a private aria2c and test against it

Needs `pip install aria2p` (it pulls in requests, websocket-client and loguru).
The server under test must run on the same machine: the script serves its own test
files over HTTP on 127.0.0.1 and reads the finished files back from DOWNLOAD_DIR.
Each check prints `ok: ...`; the first failing one prints `FAIL: ...` and the script
exits 1. Every wait is bounded (--timeout, default 20 s) and polls every 0.1 s.

What aria2c 1.36.0 (Debian) does that a compatible server must copy, or that surprised us
(all seen with aria2p 0.12.3, checked against the real aria2c):
  * A wrong or missing token is answered with HTTP 400 and the JSON-RPC error
    {"code": 1, "message": "Unauthorized"}, and only after a deliberate delay of
    about 1.7-2 s. aria2c spins a CPU core during that delay (about 1.4 s of CPU time
    per refused call): a compatible server should delay with a timer, not copy that.
    aria2p does not look at the HTTP status, only at the JSON body.
  * Inside system.multicall a wrong token is not an RPC error: the call succeeds
    (HTTP 200) and the result array holds a fault struct {"code":1,"message":"Unauthorized"}
    for that entry. Every other RPC error is HTTP 400 too, e.g. tellStatus of an unknown GID
    gives {"code":1,"message":"GID 0000000000000001 is not found"}.
  * system.listMethods / system.listNotifications need no token; aria2p never sends one
    for `system.*` methods (inside system.multicall it adds it to each inner call).
  * All numbers in results are decimal strings ("totalLength": "1048576", "numActive": "0"),
    aria2p converts them with int(). getGlobalStat also has numStoppedTotal.
  * aria2p opens the WebSocket (ws://host:port/jsonrpc) and sends nothing on it: notifications
    are pushed without any token. The listener thread starts asynchronously, so a download
    added right after listen_to_notifications() can start before the socket is open (seen:
    the first probe's onDownloadStart was lost in some runs); the script therefore adds
    tiny probe downloads until a first onDownloadStart arrives.
  * Notifications seen: onDownloadStart when a download starts, onDownloadPause on pause,
    onDownloadStart again on unpause, onDownloadComplete on success, onDownloadStop on remove.
  * pause (not forcePause) of an active HTTP download goes to "paused" at once; the paused
    download sits in the waiting queue: tellWaiting lists it with status "paused" and
    getGlobalStat counts it in numWaiting. Unpause continues with a Range request from
    where it stopped (the control file <name>.aria2 keeps the progress).
  * remove of an active HTTP download returns the GID, and the very next call already sees
    status "removed" (aria2c halts it before it answers another request). aria2p's
    API.remove() relies on that: it calls remove and at once removeDownloadResult, and only
    logs a failure of the latter. A server that removes asynchronously is still fine for
    this script (it polls), but `aria2p remove` would then leave a "removed" result behind.
    After removeDownloadResult, tellStatus answers "GID <gid> is not found".
    A removed download leaves its partial file and the .aria2 control file in --dir.
  * remove of a waiting or paused download (even one paused after it had been active) does
    not give status "removed" as the manual says: aria2c drops it at once, with no result in
    tellStopped and no onDownloadStop; tellStatus then says "GID <gid> is not found".
    The script accepts both outcomes.
  * getGlobalStat's downloadSpeed stays non-zero for a while after the last download
    completed (numActive "0", downloadSpeed "9233964"): it is a moving average.
  * Adding with option {"pause": "true"} makes the download "paused" in the waiting queue;
    changePosition(gid, pos, "POS_SET"/"POS_CUR"/"POS_END") returns the new position as an
    integer (not a string).
  * tellStopped(-1, n) returns the stopped downloads newest first (AriaNg asks that way).
  * aria2c cannot listen on port 0; --start-aria2c binds a socket to port 0 to pick a port.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

try:
    import aria2p
    from aria2p import ClientException
except ImportError:  # pragma: no cover - environment problem, not a server problem
    sys.exit("FAIL: aria2p is not installed (pip install aria2p)")

try:  # aria2p logs through loguru; keep the output to our own ok/FAIL lines
    from loguru import logger as _loguru

    _loguru.disable("aria2p")
except ImportError:  # pragma: no cover
    pass

import requests

POLL = 0.1  # seconds between polls; never poll faster
KIB = 1024
MIB = 1024 * KIB
QUICK_SIZE = 1 * MIB
SLOW_SIZE = 8 * MIB
SLOW_RATE = 256 * KIB  # bytes per second, shared by all connections to one path
PROBE_SIZE = 4 * KIB


class CheckFailed(Exception):
    """A check did not pass; the message says why."""


def ok(msg: str) -> None:
    print(f"ok: {msg}", flush=True)


def info(msg: str) -> None:
    print(f"info: {msg}", flush=True)


def require(cond: object, msg: str) -> None:
    if not cond:
        raise CheckFailed(msg)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def wait_until(what: str, probe, timeout: float):
    """Call probe() every POLL s until it returns a truthy value; return it or fail after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise CheckFailed(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(POLL)


# --------------------------------------------------------------------------- file server


class Throttle:
    """Pace the bytes sent for one path, over all its connections, to `rate` bytes/s (None: no limit)."""

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self._lock = threading.Lock()
        self._next = 0.0

    def pace(self, nbytes: int) -> None:
        with self._lock:
            rate = self.rate
            if not rate:
                return
            now = time.monotonic()
            self._next = max(self._next, now) + nbytes / rate
            delay = self._next - now
        time.sleep(delay)


def parse_range(header: str, size: int) -> tuple[int, int] | None | str:
    """Parse a single `bytes=` range. Returns (start, end) inclusive, None to ignore, 'unsatisfiable'."""
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None  # unknown unit or multi-range: serving the whole body is allowed
    first, dash, last = spec.strip().partition("-")
    if not dash:
        return None
    try:
        if first == "":  # suffix range: the last N bytes
            n = int(last)
            if n <= 0:
                return "unsatisfiable"
            return max(0, size - n), size - 1
        start = int(first)
        end = int(last) if last else size - 1
    except ValueError:
        return None
    if start >= size:
        return "unsatisfiable"
    if end < start:
        return None
    return start, min(end, size - 1)


class FileServer:
    """HTTP/1.1 server on 127.0.0.1:0 serving in-memory files, with Range, HEAD and throttling."""

    CHUNK = 16 * KIB

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.throttles: dict[str, Throttle] = {}
        self.requests: list[tuple[str, str, str | None, int]] = []  # (method, name, Range, status)
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "aria2p-interop-fileserver/1"
            timeout = 30  # idle keep-alive connections do not live forever

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                self._serve(head=True)

            def do_GET(self) -> None:
                self._serve(head=False)

            def _serve(self, head: bool) -> None:
                name = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path.lstrip("/"))
                data = owner.lookup(name)
                rng = self.headers.get("Range")
                if data is None:
                    owner.record(self.command, name, rng, 404)
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                size = len(data)
                start, end, status = 0, size - 1, 200
                parsed = parse_range(rng, size) if rng else None
                if parsed == "unsatisfiable":
                    owner.record(self.command, name, rng, 416)
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{size}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if parsed:
                    start, end = parsed
                    status = 206
                owner.record(self.command, name, rng, status)
                self.send_response(status)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Content-Length", str(end - start + 1))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
                self.end_headers()
                if head:
                    return
                throttle = owner.throttles.get(name)
                try:
                    pos = start
                    while pos <= end:
                        n = min(FileServer.CHUNK, end + 1 - pos)
                        if throttle:
                            throttle.pace(n)
                        self.wfile.write(data[pos : pos + n])
                        pos += n
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, socket.timeout):
                    self.close_connection = True  # the client went away (pause/remove): fine

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{urllib.parse.quote(name)}"

    def add(self, name: str, data: bytes, rate: float | None = None) -> str:
        self.files[name] = data
        if rate:
            self.throttles[name] = Throttle(rate)
        return self.url(name)

    def set_rate(self, name: str, rate: float | None) -> None:
        self.throttles[name].rate = rate

    def lookup(self, name: str) -> bytes | None:
        if name in self.files:
            return self.files[name]
        if name.startswith("probe-"):  # any probe-* name: a tiny file for the notification probe
            return self.files.get("probe")
        return None

    def record(self, method: str, name: str, rng: str | None, status: int) -> None:
        with self._lock:
            self.requests.append((method, name, rng, status))

    def requests_for(self, name: str) -> list[tuple[str, str, str | None, int]]:
        with self._lock:
            return [r for r in self.requests if r[1] == name]

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# --------------------------------------------------------------------------- aria2c (--start-aria2c)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Aria2c:
    """A private aria2c --enable-rpc, started and stopped by PID."""

    def __init__(self, binary: str, port: int, secret: str, download_dir: str, log_path: Path) -> None:
        self.cmd = [
            binary,
            "--enable-rpc",
            f"--rpc-listen-port={port}",
            f"--rpc-secret={secret}",
            "--rpc-listen-all=false",
            f"--dir={download_dir}",
            "--no-conf",
            "--quiet",
            "--summary-interval=0",
            f"--stop-with-process={os.getpid()}",  # dies with us even if we are killed
        ]
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def start(self, client: aria2p.Client, timeout: float = 10.0) -> None:
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

        def answers() -> bool:
            if self.proc.poll() is not None:
                raise CheckFailed(f"aria2c exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}")
            try:
                client.get_version()
            except requests.RequestException:
                return False
            return True

        wait_until("aria2c to answer getVersion", answers, timeout)

    def stop(self, timeout: float = 5.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout)


# --------------------------------------------------------------------------- notifications


class Notifications:
    """Collects (event, gid) pairs delivered by aria2p's listener thread."""

    EVENTS = ("start", "pause", "stop", "complete", "error", "bt_complete")

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self._cond = threading.Condition()

    def callbacks(self) -> dict:
        def make(event: str):
            def callback(_api: aria2p.API, gid: str) -> None:
                with self._cond:
                    self.events.append((event, gid))
                    self._cond.notify_all()

            return callback

        return {f"on_download_{e}" if e != "bt_complete" else "on_bt_download_complete": make(e) for e in self.EVENTS}

    def seen(self, event: str, gid: str) -> bool:
        with self._cond:
            return (event, gid) in self.events

    def for_gid(self, gid: str) -> list[str]:
        with self._cond:
            return [e for e, g in self.events if g == gid]

    def any_of(self, event: str, gids: set[str]) -> str | None:
        with self._cond:
            return next((g for e, g in self.events if e == event and g in gids), None)

    def wait(self, event: str, gid: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while (event, gid) not in self.events:
                left = deadline - time.monotonic()
                if left <= 0:
                    got = [e for e, g in self.events if g == gid]
                    raise CheckFailed(f"no onDownload{event.capitalize()} notification for {gid} within {timeout:g} s "
                                      f"(got for it: {got})")
                self._cond.wait(min(left, POLL))


# --------------------------------------------------------------------------- checks


class Ctx:
    """Everything the checks share."""

    def __init__(self, args: argparse.Namespace, api: aria2p.API, files: FileServer, run_id: str) -> None:
        self.args = args
        self.api = api
        self.client: aria2p.Client = api.client
        self.files = files
        self.timeout: float = args.timeout
        self.dir = Path(args.dir)
        self.run_id = run_id
        self.notes = Notifications()
        self.listening = False
        self.data: dict[str, bytes] = {}
        self.completed_gid: str | None = None

    def name(self, kind: str) -> str:
        return f"{kind}-{self.run_id}.bin"

    def serve(self, kind: str, data: bytes, rate: float | None = None) -> tuple[str, str]:
        name = self.name(kind)
        self.data[name] = data
        return name, self.files.add(name, data, rate)

    def status(self, gid: str) -> dict:
        return self.client.tell_status(gid)

    def wait_status(self, gid: str, wanted: str, timeout: float | None = None, extra=None) -> dict:
        """Poll tellStatus until status == wanted (and extra(struct) holds); fail fast on 'error'."""

        def probe():
            st = self.status(gid)
            if st["status"] == "error" and wanted != "error":
                raise CheckFailed(f"download {gid} failed: errorCode={st.get('errorCode')} "
                                  f"errorMessage={st.get('errorMessage')!r}")
            return st if st["status"] == wanted and (extra is None or extra(st)) else None

        return wait_until(f"{gid} to be {wanted}", probe, timeout or self.timeout)

    def check_file(self, name: str) -> None:
        path = self.dir / name
        require(path.is_file(), f"{path} does not exist")
        got = sha256(path.read_bytes())
        want = sha256(self.data[name])
        require(got == want, f"{path}: sha-256 {got} != source {want}")


def is_decimal_string(value: object) -> bool:
    return isinstance(value, str) and value.isdigit()


def check_version(ctx: Ctx) -> None:
    v = ctx.client.get_version()
    require(isinstance(v, dict), f"getVersion result is not a struct: {v!r}")
    require(isinstance(v.get("version"), str) and v["version"], f"getVersion has no version string: {v!r}")
    require(isinstance(v.get("enabledFeatures"), list), f"getVersion has no enabledFeatures list: {v!r}")
    ok(f"version: getVersion -> version {v['version']}, {len(v['enabledFeatures'])} enabledFeatures")


def check_wrong_secret(ctx: Ctx) -> None:
    took = []
    for label, secret in (("wrong secret", ctx.client.secret + "-wrong"), ("no secret", "")):
        bad = aria2p.Client(host=ctx.client.host, port=ctx.client.port, secret=secret, timeout=15)
        t0 = time.monotonic()
        try:
            answer = bad.get_version()
        except ClientException as exc:
            took.append(f"{label} after {time.monotonic() - t0:.1f} s")
            require(exc.code == 1, f"{label}: error code {exc.code}, expected 1")
            require(exc.message == "Unauthorized", f"{label}: error message {exc.message!r}, expected 'Unauthorized'")
            continue
        raise CheckFailed(f"{label} was accepted: getVersion -> {answer!r}")
    ok(f"wrong secret refused: code 1 'Unauthorized' ({', '.join(took)})")


def start_listening(ctx: Ctx) -> None:
    """Start aria2p's threaded WebSocket listener; prove it is connected with probe downloads."""
    ctx.api.listen_to_notifications(threaded=True, timeout=1, **ctx.notes.callbacks())
    ctx.listening = True
    probe_name, _ = ctx.serve("probe", os.urandom(PROBE_SIZE))
    ctx.files.files["probe"] = ctx.data[probe_name]
    probes: set[str] = set()
    deadline = time.monotonic() + ctx.timeout
    while True:
        thread = ctx.api.listener
        require(thread is not None and thread.is_alive(),
                f"aria2p listener thread died: cannot open ws://{ctx.args.host}:{ctx.args.port}/jsonrpc")
        gid = ctx.client.add_uri([ctx.files.url(f"probe-{ctx.run_id}-{len(probes)}.bin")])
        probes.add(gid)
        wait_end = min(deadline, time.monotonic() + 1.0)
        while time.monotonic() < wait_end and not ctx.notes.any_of("start", probes):
            time.sleep(POLL)
        if ctx.notes.any_of("start", probes):
            break
        require(time.monotonic() < deadline, f"no onDownloadStart for any of {len(probes)} probe downloads "
                                             f"within {ctx.timeout:g} s over the WebSocket")
    for gid in probes:  # let the probes finish so later stats are quiet
        ctx.wait_status(gid, "complete")
    ok(f"notifications: aria2p WebSocket listener connected (after {len(probes)} probe download(s))")


def check_add_complete(ctx: Ctx) -> None:
    name, url = ctx.serve("quick", os.urandom(QUICK_SIZE))
    dl = ctx.api.add_uris([url])
    gid = dl.gid
    require(isinstance(gid, str) and len(gid) == 16 and all(c in "0123456789abcdef" for c in gid),
            f"addUri returned {gid!r}, expected a 16-hex-digit GID")
    st = ctx.wait_status(gid, "complete")
    dl.update()
    for key in ("totalLength", "completedLength"):
        require(is_decimal_string(st.get(key)), f"tellStatus {key} is {st.get(key)!r}, expected a decimal string")
    require(dl.total_length == QUICK_SIZE, f"aria2p total_length {dl.total_length} != {QUICK_SIZE}")
    require(dl.completed_length == QUICK_SIZE, f"aria2p completed_length {dl.completed_length} != {QUICK_SIZE}")
    require(dl.is_complete and dl.status == "complete", f"aria2p status {dl.status!r}")
    require(dl.name == name, f"aria2p name {dl.name!r} != {name!r} (from tellStatus dir/files[0].path)")
    fpath = Path(dl.files[0].path)
    require(fpath.resolve() == (ctx.dir / name).resolve(), f"files[0].path {fpath} is not {ctx.dir / name}")
    ctx.check_file(name)
    ctx.completed_gid = gid
    ok(f"add + complete: {name} ({QUICK_SIZE} bytes) gid {gid} complete, sha-256 matches, "
       f"totalLength/completedLength {st['totalLength']}/{st['completedLength']}")


def check_notifications(ctx: Ctx) -> None:
    gid = ctx.completed_gid
    ctx.notes.wait("start", gid, ctx.timeout)
    ctx.notes.wait("complete", gid, ctx.timeout)
    seq = ctx.notes.for_gid(gid)
    require(seq.index("start") < seq.index("complete"), f"onDownloadComplete before onDownloadStart: {seq}")
    ok(f"notifications: onDownloadStart then onDownloadComplete for {gid} ({seq})")


def check_global_stat(ctx: Ctx) -> None:
    keys = ("downloadSpeed", "uploadSpeed", "numActive", "numWaiting", "numStopped", "numStoppedTotal")

    def consistent():
        raw = ctx.client.get_global_stat()
        for key in keys:
            require(is_decimal_string(raw.get(key)), f"getGlobalStat {key} is {raw.get(key)!r}, expected a decimal string")
        lists = (len(ctx.client.tell_active()), len(ctx.client.tell_waiting(0, 1000)),
                 len(ctx.client.tell_stopped(0, 1000)))
        counts = (int(raw["numActive"]), int(raw["numWaiting"]), int(raw["numStopped"]))
        return raw if counts == lists else None

    raw = wait_until("getGlobalStat numActive/numWaiting/numStopped to match tellActive/tellWaiting/tellStopped",
                     consistent, 5)
    stats = ctx.api.get_stats()
    require(stats.num_stopped >= 1, f"numStopped is {stats.num_stopped}, but a download has completed")
    require(stats.num_stopped_total >= stats.num_stopped, f"numStoppedTotal {stats.num_stopped_total} < numStopped")
    ok("global stat: " + ", ".join(f"{k}={raw[k]!r}" for k in keys) + " (match the tell* list lengths)")


def check_tell_stopped(ctx: Ctx) -> None:
    gid = ctx.completed_gid
    oldest_first = ctx.client.tell_stopped(0, 1000)
    gids = [d["gid"] for d in oldest_first]
    require(gid in gids, f"tellStopped(0, 1000) does not list the completed {gid}: {gids}")
    entry = next(d for d in oldest_first if d["gid"] == gid)
    require(entry["status"] == "complete", f"tellStopped lists {gid} with status {entry['status']!r}")
    newest_first = [d["gid"] for d in ctx.client.tell_stopped(-1, 1000)]
    require(newest_first == gids[::-1], f"tellStopped(-1, 1000) {newest_first} is not the reverse of {gids}")
    few = [d["gid"] for d in ctx.client.tell_stopped(0, 1)]
    require(few == gids[:1], f"tellStopped(0, 1) -> {few}, expected {gids[:1]}")
    ok(f"tellStopped: (0, 1000) lists {gid} among {len(gids)}; (-1, 1000) gives them newest first; num is honoured")


def check_pause_unpause(ctx: Ctx) -> None:
    name, url = ctx.serve("slow", os.urandom(SLOW_SIZE), rate=SLOW_RATE)
    dl = ctx.api.add_uris([url])
    gid = dl.gid
    ctx.wait_status(gid, "active", extra=lambda s: int(s["completedLength"]) >= 64 * KIB)
    dl.update()

    forced = False
    result = ctx.api.pause([dl])[0]
    require(result is True, f"pause({gid}) failed: {result}")
    try:
        st = ctx.wait_status(gid, "paused", timeout=min(5.0, ctx.timeout))
    except CheckFailed:  # a server may only pause at once when forced
        forced = True
        result = ctx.api.pause([dl], force=True)[0]
        require(result is True, f"forcePause({gid}) failed: {result}")
        st = ctx.wait_status(gid, "paused")
    paused_at = int(st["completedLength"])
    ctx.notes.wait("pause", gid, ctx.timeout)
    waiting = {d["gid"]: d["status"] for d in ctx.client.tell_waiting(0, 1000)}
    require(waiting.get(gid) == "paused", f"paused {gid} not in tellWaiting with status paused: {waiting}")
    time.sleep(0.5)
    still = int(ctx.status(gid)["completedLength"])
    require(still == paused_at, f"completedLength moved while paused: {paused_at} -> {still}")

    result = ctx.api.resume([dl])[0]
    require(result is True, f"unpause({gid}) failed: {result}")
    ctx.wait_status(gid, "active", extra=lambda s: int(s["completedLength"]) > paused_at)
    ctx.files.set_rate(name, None)  # seen resuming: let it finish quickly
    st = ctx.wait_status(gid, "complete")
    require(int(st["completedLength"]) == SLOW_SIZE, f"completedLength {st['completedLength']} != {SLOW_SIZE}")
    ctx.check_file(name)
    gets = [r for r in ctx.files.requests_for(name) if r[0] == "GET"]
    resumed = [r[2] for r in gets[1:] if r[2] and not r[2].startswith("bytes=0-")]
    info(f"pause/unpause: {len(gets)} GET(s) for {name}; resumed with Range {resumed[0] if resumed else 'none'}; "
         f"notifications for it: {ctx.notes.for_gid(gid)}")
    ok(f"pause/unpause: {gid} active -> {'forcePause' if forced else 'pause'} -> paused at {paused_at} bytes "
       f"(stable, onDownloadPause, in tellWaiting) -> unpause -> active -> complete, sha-256 matches")


def check_remove(ctx: Ctx) -> None:
    name, url = ctx.serve("removed", os.urandom(SLOW_SIZE), rate=SLOW_RATE)
    gid = ctx.client.add_uri([url])
    ctx.wait_status(gid, "active", extra=lambda s: int(s["completedLength"]) > 0)
    answer = ctx.client.remove(gid)
    require(answer == gid, f"remove({gid}) returned {answer!r}")
    st = ctx.wait_status(gid, "removed")
    ctx.notes.wait("stop", gid, ctx.timeout)
    stopped = {d["gid"]: d["status"] for d in ctx.client.tell_stopped(0, 1000)}
    require(stopped.get(gid) == "removed", f"removed {gid} not in tellStopped as removed: {stopped}")
    ctx.files.set_rate(name, None)
    answer = ctx.client.remove_download_result(gid)
    require(answer == "OK", f"removeDownloadResult({gid}) returned {answer!r}")
    gids = [d["gid"] for d in ctx.client.tell_stopped(0, 1000)]
    require(gid not in gids, f"{gid} still in tellStopped after removeDownloadResult")
    try:
        gone = ctx.status(gid)
    except ClientException as exc:
        ok(f"remove: {gid} active -> remove -> removed at {st['completedLength']} bytes (tellStatus answers, "
           f"onDownloadStop) -> removeDownloadResult -> gone (tellStatus: code {exc.code} {exc.message!r})")
        return
    raise CheckFailed(f"tellStatus({gid}) still answers after removeDownloadResult: {gone.get('status')!r}")


def check_waiting_and_position(ctx: Ctx) -> None:
    active = ctx.client.tell_active()
    require(isinstance(active, list) and all(d.get("status") == "active" for d in active),
            f"tellActive gave {active!r}")
    data = os.urandom(PROBE_SIZE)
    gid_a = ctx.client.add_uri([ctx.serve("wait-a", data)[1]], {"pause": "true"})
    gid_b = ctx.client.add_uri([ctx.serve("wait-b", data)[1]], {"pause": "true"})
    for gid in (gid_a, gid_b):
        ctx.wait_status(gid, "paused")

    def order() -> list[str]:
        waiting = ctx.client.tell_waiting(0, 1000, keys=["gid", "status"])
        for d in waiting:
            require(set(d) <= {"gid", "status"}, f"tellWaiting with keys [gid, status] returned keys {sorted(d)}")
        return [d["gid"] for d in waiting if d["gid"] in (gid_a, gid_b)]

    require(order() == [gid_a, gid_b], f"tellWaiting order {order()}, expected [{gid_a}, {gid_b}]")
    pos = ctx.client.change_position(gid_b, 0, "POS_SET")
    require(pos == 0, f"changePosition({gid_b}, 0, POS_SET) returned {pos!r}, expected 0")
    require(order() == [gid_b, gid_a], f"after POS_SET 0, tellWaiting order {order()}")
    pos = ctx.client.change_position(gid_b, 1, "POS_CUR")
    require(pos == 1, f"changePosition({gid_b}, 1, POS_CUR) returned {pos!r}, expected 1")
    require(order() == [gid_a, gid_b], f"after POS_CUR +1, tellWaiting order {order()}")
    fates = []
    for gid in (gid_a, gid_b):
        answer = ctx.client.remove(gid)
        require(answer == gid, f"remove({gid}) of a paused download returned {answer!r}")
        fates.append(wait_until(f"removed paused {gid} to be 'removed' or gone", lambda: gone_or_removed(ctx, gid),
                                ctx.timeout))
        if fates[-1] == "removed":
            ctx.client.remove_download_result(gid)
    ok(f"tellActive/tellWaiting: lists answer; add with pause=true -> paused in tellWaiting (keys honoured); "
       f"changePosition POS_SET 0 -> 0, POS_CUR +1 -> 1 reorders the queue; remove of a paused one -> {fates[0]}")


def gone_or_removed(ctx: Ctx, gid: str) -> str | None:
    """aria2c drops a removed waiting/paused download at once (tellStatus: not found); the docs say 'removed'."""
    try:
        status = ctx.status(gid)["status"]
    except ClientException as exc:
        require("not found" in exc.message, f"tellStatus({gid}) after remove: code {exc.code} {exc.message!r}")
        return "gone (tellStatus: not found)"
    return "removed" if status == "removed" else None


def check_system_methods(ctx: Ctx) -> None:
    methods = ctx.client.list_methods()  # aria2p sends no token for system.*
    needed = {"aria2.addUri", "aria2.tellStatus", "aria2.pause", "aria2.unpause", "aria2.remove",
              "aria2.tellActive", "aria2.tellWaiting", "aria2.tellStopped", "aria2.getGlobalStat",
              "aria2.removeDownloadResult", "aria2.purgeDownloadResult", "aria2.changePosition",
              "aria2.getVersion", "system.multicall", "system.listMethods"}
    missing = needed - set(methods)
    require(not missing, f"system.listMethods lacks {sorted(missing)}")
    notifications = ctx.client.list_notifications()
    wanted = {"aria2.onDownloadStart", "aria2.onDownloadPause", "aria2.onDownloadStop",
              "aria2.onDownloadComplete", "aria2.onDownloadError"}
    require(wanted <= set(notifications), f"system.listNotifications lacks {sorted(wanted - set(notifications))}")
    multi = ctx.client.multicall2([(ctx.client.GET_VERSION, []), (ctx.client.GET_GLOBAL_STAT, [])])
    require(isinstance(multi, list) and len(multi) == 2 and all(isinstance(r, list) and len(r) == 1 for r in multi),
            f"system.multicall result {multi!r}: expected two one-element arrays")
    require("version" in multi[0][0] and "numActive" in multi[1][0], f"system.multicall results {multi!r}")
    batch = ctx.client.batch_call([(ctx.client.GET_VERSION, [], 1), (ctx.client.TELL_ACTIVE, [], 2)])
    require(len(batch) == 2 and "version" in batch[0] and isinstance(batch[1], list), f"batch results {batch!r}")
    ok(f"system: listMethods ({len(methods)}) and listNotifications without token; system.multicall and "
       f"a JSON-RPC batch answer")


def check_purge(ctx: Ctx) -> None:
    require(ctx.api.purge(), "purgeDownloadResult did not answer OK")
    left = ctx.client.tell_stopped(0, 1000)
    require(left == [], f"tellStopped after purgeDownloadResult still lists {[d['gid'] for d in left]}")
    num_stopped = ctx.client.get_global_stat()["numStopped"]
    require(num_stopped == "0", f"numStopped after purge is {num_stopped!r}")
    ok("purge: purgeDownloadResult -> OK, tellStopped empty, numStopped '0'")


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--host", default="127.0.0.1", help="RPC host (default 127.0.0.1; http:// is added)")
    p.add_argument("--port", type=int, help="RPC port")
    p.add_argument("--secret", help="RPC secret (--rpc-secret of the server)")
    p.add_argument("--dir", help="the directory the server downloads into")
    p.add_argument("--timeout", type=float, default=20.0, help="bound of every wait, seconds (default 20)")
    p.add_argument("--start-aria2c", action="store_true", help="start a private aria2c on a free port and test it")
    p.add_argument("--aria2c", default="aria2c", help="aria2c binary for --start-aria2c")
    args = p.parse_args(argv)
    if not args.start_aria2c:
        missing = [o for o in ("port", "secret", "dir") if not getattr(args, o)]
        if missing:
            p.error("without --start-aria2c, these are needed: " + ", ".join("--" + m for m in missing))
    return args


CHECKS = [
    check_version,
    check_wrong_secret,
    start_listening,
    check_add_complete,
    check_notifications,
    check_global_stat,
    check_tell_stopped,
    check_pause_unpause,
    check_remove,
    check_waiting_and_position,
    check_system_methods,
    check_purge,
]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.monotonic()
    workdir = None
    aria2c = None
    files = FileServer()
    ctx = None
    current = "setup"
    try:
        if args.start_aria2c:
            workdir = Path(tempfile.mkdtemp(prefix="aria2p-interop-"))
            args.port = args.port or free_port()
            args.secret = args.secret or secrets.token_hex(16)
            args.dir = args.dir or str(workdir / "downloads")
            Path(args.dir).mkdir(parents=True, exist_ok=True)
            binary = shutil.which(args.aria2c) or args.aria2c
            aria2c = Aria2c(binary, args.port, args.secret, args.dir, workdir / "aria2c.log")
        host = args.host if "://" in args.host else f"http://{args.host}"
        client = aria2p.Client(host=host, port=args.port, secret=args.secret, timeout=10)
        if aria2c:
            aria2c.start(client)
            info(f"started {' '.join(aria2c.cmd[:2])} on port {args.port} (pid {aria2c.proc.pid}), dir {args.dir}")
        files.start()
        ctx = Ctx(args, aria2p.API(client), files, secrets.token_hex(4))
        for check in CHECKS:
            current = check.__name__
            check(ctx)
    except CheckFailed as exc:
        print(f"FAIL: {current}: {exc}", flush=True)
        return 1
    except ClientException as exc:
        print(f"FAIL: {current}: unexpected RPC error, code {exc.code}: {exc.message}", flush=True)
        return 1
    except requests.ConnectionError as exc:
        print(f"FAIL: {current}: cannot reach {client.server}: {exc}", flush=True)
        return 1
    except (requests.RequestException, OSError, LookupError, ValueError, TypeError) as exc:
        print(f"FAIL: {current}: {type(exc).__name__}: {exc}", flush=True)
        return 1
    finally:
        if ctx is not None and ctx.listening:
            ctx.api.stop_listening()  # listener polls with timeout=1, so this returns within ~1 s
        files.stop()
        if aria2c:
            aria2c.stop()
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"PASS: {len(CHECKS)} checks in {time.monotonic() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
