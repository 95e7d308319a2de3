#!/usr/bin/env python3
"""scripts/make-order.py — the linker's function order for the release binary (linker/swoop.order).

    python3 scripts/make-order.py --swoop .build/release/swoop [--nginx /usr/sbin/nginx]

Runs the release binary under valgrind's callgrind through the commands users run most (a small
`get` with and without progress lines, a 64 MiB one, a segmented one, forty files from a list,
`ls`) against a private nginx, and writes every function of the binary that ran, Swift's first (in
callgrind's order, which is not the order they ran: what counts is which functions are together).
Package.swift hands the file to lld (`--symbol-ordering-file`) for release builds on Linux: the
code those commands run is laid out together, so fewer of the binary's pages are touched and mapped
(with the kernel mapping 64 KiB around each page fault, scattered code cost about 20 MiB of
resident memory). Objects SwiftPM compiles keep a source file's functions in one section, so lld
moves those whole; the toolchain's static libraries are ordered function by function.

The order is a hint: a function renamed or added since only lands where the linker would put it
anyway. Regenerate after large changes, then relink (SwiftPM does not see this file change:
`rm .build/release/swoop` first) and re-measure peak RSS with scripts/bench.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import benchlib


def functions(binary_name, paths):
    """Functions of `binary_name` in callgrind output files, in order of first appearance."""
    seen = {}
    for path in paths:
        objects, names = {}, {}
        current = callee = None
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
                if m:
                    kind, index, name = m.groups()
                    if name:
                        objects[index] = name.strip()
                    if kind == "ob":
                        current = objects.get(index)
                    else:
                        callee = objects.get(index)
                    continue
                m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
                if m:
                    kind, index, name = m.groups()
                    if name:
                        names[index] = name.strip()
                    owner = current if kind == "fn" else callee
                    function = names.get(index)
                    if function and owner and owner.endswith(binary_name) and not function.startswith("0x"):
                        seen.setdefault(function, len(seen))
                    if kind == "fn":
                        callee = current
    ordered = sorted(seen, key=seen.get)
    return [f for f in ordered if f.startswith("$s")] + [f for f in ordered if not f.startswith("$s")]


def main():
    parser = benchlib.argument_parser(__doc__)
    parser.add_argument("--swoop", required=True)
    parser.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "linker", "swoop.order"))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="swoop-order.")
    # valgrind 3.19 cannot read the DWARF 5 of Swift 6; the symbols are all it needs.
    binary = os.path.join(work, "swoop")
    subprocess.run(["strip", "--strip-debug", "-o", binary, args.swoop], check=True)
    www = os.path.join(work, "www")
    os.makedirs(www)
    for name, size in [("small", 1 << 10), ("medium", 8 << 20), ("large", 64 << 20)] + [(f"f{i}", 64 << 10) for i in range(40)]:
        with open(os.path.join(www, name), "wb") as f:
            f.write(os.urandom(size))
    nginx, port, _ = benchlib.start_nginx(args.nginx, work, server=f"root {www};", label="make-order")
    base = f"http://127.0.0.1:{port}"
    with open(os.path.join(work, "list"), "w") as f:
        f.writelines(f"{base}/f{i}\n" for i in range(40))
    runs = [
        ["get", "-q", "-o", "{out}/small", f"{base}/small"],
        ["get", "-o", "{out}/plain", f"{base}/small"],
        # Long enough for the writeback and checkpoints of a large file.
        ["get", "-q", "-o", "{out}/large", f"{base}/large"],
        ["get", "-q", "-x", "4", "--min-split-size", "1M", "-o", "{out}/medium", f"{base}/medium"],
        ["get", "-q", "-j", "8", "-i", os.path.join(work, "list"), "-d", "{out}/list"],
        ["ls"],
    ]
    outputs = []
    try:
        for number, run in enumerate(runs):
            out = os.path.join(work, f"out{number}")
            os.makedirs(out)
            output = os.path.join(work, f"callgrind.{number}")
            command = ["valgrind", "-q", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={output}", binary]
            command += [a.replace("{out}", out) for a in run] + ["--state-dir", os.path.join(work, "state")]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
            outputs.append(output)
    finally:
        benchlib.stop_nginx(nginx)
    ordered = functions("swoop", outputs)
    with open(args.out, "w") as f:
        f.writelines(name + "\n" for name in ordered)
    print(f"make-order: {len(ordered)} functions in {os.path.relpath(args.out)}", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    benchlib.run_main(main, "make-order")
