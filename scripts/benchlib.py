"""scripts/benchlib.py — what the benchmark scripts share: a private nginx on 127.0.0.1, random
files, sha-256 of files. Imported by scripts/bench-*.py (their folder is on sys.path)."""

import argparse
import contextlib
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def prepare_binaries(*paths):
    """Drops each binary (a path, or a command found on PATH) from the page cache and starts it once
    (`--version`), so that every tool is measured alike, as after a reboot. Peak RSS counts the pages
    each page fault maps, and how many depends on how the file came into the page cache: on Linux 6.18
    (large page-cache folios) one swoop peaked at 23.2 MiB for 1 GiB when its pages came in by demand,
    24.9 right after a `cp` and 25.5-26.7 after a `cat` of the whole file. Pages that a running
    process maps stay cached."""
    for path in paths:
        found = path if os.path.sep in path else shutil.which(path)
        if not found or not os.path.isfile(found):
            continue
        descriptor = os.open(found, os.O_RDONLY)
        try:
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(descriptor)
        try:
            subprocess.run([found, "--version"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=30)
        except (OSError, subprocess.SubprocessError):
            pass


@contextlib.contextmanager
def fresh_ext4(size, files=0, label="bench"):
    """A journaled ext4 made for this measurement: a sparse image of `size` bytes in a temporary
    directory, `mkfs.ext4` (with inodes for at least `files` files), mounted through a loop device; yields the mount point, then unmounts it
    and removes the image. Needs root (`mount -o loop`) and mkfs.ext4 (e2fsprogs).

    Why: this machine's root file system is ext4 without a journal, and there ext4 skips every inode
    deleted in the last minutes when it makes a file (`recently_deleted`, checked only without a
    journal), a scan whose cost grows with each earlier deletion: `curl --parallel` of 2,000 files
    took 0.57, 1.60 and 2.30 s in three rounds that each deleted the last one's files (system time
    0.36, 1.37, 2.13 s). Every run of every tool on /tmp pays what the runs before it deleted. A fresh
    journaled ext4 is what a user's disk is like and holds nothing deleted."""
    if os.geteuid() != 0:
        sys.exit(f"{label}: --fresh-ext4 needs root (mount -o loop)")
    if not shutil.which("mkfs.ext4"):
        sys.exit(f"{label}: --fresh-ext4 needs mkfs.ext4 (apt-get install e2fsprogs)")
    holder = tempfile.mkdtemp(prefix=f"swoop-{label}-ext4.")
    image = os.path.join(holder, "ext4.img")
    mount_point = os.path.join(holder, "mnt")
    os.mkdir(mount_point)
    mounted = False
    try:
        with open(image, "wb") as f:
            f.truncate(size)
        inodes = ["-N", str(files * 5 // 4 + 4096)] if files else []
        made = subprocess.run(["mkfs.ext4", "-q", "-F", *inodes, image], capture_output=True, text=True)
        if made.returncode != 0:
            sys.exit(f"{label}: mkfs.ext4 {image} failed: {made.stderr.strip()}")
        mounting = subprocess.run(["mount", "-o", "loop", image, mount_point], capture_output=True, text=True)
        if mounting.returncode != 0:
            sys.exit(f"{label}: cannot mount {image} through a loop device: {mounting.stderr.strip()}")
        mounted = True
        yield mount_point
    finally:
        if mounted:
            # A tool stopped by Ctrl-C may still hold files there for a moment: try again, then
            # detach it lazily, and never remove what is under a mount point still mounted.
            for _ in range(20):
                if subprocess.run(["umount", mount_point], capture_output=True).returncode == 0:
                    break
                time.sleep(0.25)
            else:
                subprocess.run(["umount", "-l", mount_point], capture_output=True)
        if not os.path.ismount(mount_point):
            shutil.rmtree(holder, ignore_errors=True)
        else:
            print(f"{label}: could not unmount {mount_point}; left {holder}", file=sys.stderr)


def argument_parser(doc):
    """An argument parser whose --help prints the script's docstring (what it measures, how)."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def run_main(main, label):
    """Runs a script's `main`; a Ctrl-C ends it with one line (its `finally` blocks have cleaned up)."""
    try:
        main()
    except KeyboardInterrupt:
        print(f"{label}: interrupted", file=sys.stderr)
        sys.exit(130)


def free_port():
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(nginx, work, server="", http="", listen="", label="bench", host="127.0.0.1"):
    """Starts nginx in the foreground with its own prefix, pid file and logs under `work`/nginx.

    `server` and `http` are extra directives for the server and http blocks; `listen` is appended to
    the listen directive (e.g. " ssl http2"); `host` is the loopback address to listen on. Returns
    (process, port, nginx directory). Exits the
    script with a message when nginx does not answer within 10 s.
    """
    found = nginx if os.path.sep in nginx else shutil.which(nginx)
    if not found or not os.access(found, os.X_OK):
        sys.exit(f"{label}: no nginx at {nginx} (apt-get install nginx-light, or give its path with --nginx)")
    port = free_port()
    conf_dir = os.path.join(work, "nginx")
    os.makedirs(os.path.join(conf_dir, "tmp"), exist_ok=True)
    user = "user root;\n" if os.geteuid() == 0 else ""
    # `access_log off` would cancel a log the caller asks for in `http`.
    access = "" if "access_log" in http else "access_log off;"
    conf = f"""daemon off;
worker_processes 1;
{user}pid {conf_dir}/nginx.pid;
error_log {conf_dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    {access}
    client_body_temp_path {conf_dir}/tmp;
    default_type application/octet-stream;
    {http}
    server {{
        listen {host}:{port}{listen};
        {server}
    }}
}}
"""
    path = os.path.join(conf_dir, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    process = subprocess.Popen(
        [nginx, "-p", conf_dir, "-e", os.path.join(conf_dir, "error.log"), "-c", path],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return process, port, conf_dir
        except OSError:
            time.sleep(0.05)
    process.kill()
    sys.exit(f"{label}: nginx did not start (see {conf_dir}/error.log)")


def stop_nginx(process):
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def write_random(path, size):
    """Writes `size` random bytes to `path` (in 4 MiB blocks)."""
    with open(path, "wb") as f:
        left = size
        while left:
            block = os.urandom(min(left, 4 << 20))
            f.write(block)
            left -= len(block)


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def timed(cmd, cwd, label):
    """Runs `cmd` in `cwd` under /usr/bin/time (no stdin) and returns (wall s, CPU s, peak RSS MiB).

    Exits the script, naming `label` and showing the end of stderr, when the command fails.
    """
    timing = os.path.join(cwd, ".time.txt")
    started = time.monotonic()
    # In a process group of its own, stopped whole when this script is interrupted: a Ctrl-C sent
    # to the script alone (not to the terminal's group) killed `time` and left the tool running,
    # with files open in a --fresh-ext4 image that then could not be unmounted.
    process = subprocess.Popen(["/usr/bin/time", "-f", "%U %S %M", "-o", timing] + cmd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, start_new_session=True)
    try:
        stdout, stderr = process.communicate()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    result = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    wall = time.monotonic() - started
    if result.returncode != 0:
        said = (result.stderr.strip() or result.stdout.strip())[-2000:] or "(it printed nothing)"
        sys.exit(f"{label} failed (exit {result.returncode}): {' '.join(cmd[:3])} …\n{said}")
    with open(timing) as f:
        user, system, rss = f.read().split()
    os.unlink(timing)
    return wall, float(user) + float(system), int(rss) / 1024
