#!/usr/bin/env python3
"""scripts/bench-page.py — the web page with 10,000 downloads (issue 13's benchmark).

Run by scripts/bench (BENCH_SUITES="page" runs only this part), or directly:

    python3 scripts/bench-page.py --swoop .build/release/swoop --nginx /usr/sbin/nginx [--count 10000] [--runs 3]

A daemon with 16 downloads at once (`-j 16`) and `--count` added over RPC (batches of 500), from a
private nginx whose `limit_rate 16k` keeps 16 transferring and the rest waiting throughout. Then,
each run: the daemon's CPU over `--seconds` with no page open; headless Chromium opens the page
(Debian's chromium and chromium-driver, Selenium) and the script measures, in the browser with the
Performance API: the first render (from navigation start until the first page of rows is in the
list), and over `--seconds` of live updates the frame intervals (requestAnimationFrame, p50, p95,
max: 16.7 ms is every frame at 60 Hz), the time the page's own frame callbacks take (its renders,
p95 and max) and long tasks (over 50 ms); with the daemon's CPU over the same seconds. Prints a Markdown table (medians
over the runs) on stdout; progress on stderr.
"""

import os
import statistics
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "Tests", "Web"))
import benchlib  # noqa: E402
import browser  # noqa: E402

import importlib.util  # noqa: E402

spec = importlib.util.spec_from_file_location("bench_daemon", os.path.join(here, "bench-daemon.py"))
bench_daemon = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_daemon)

# Runs in the page before its own scripts: when the first row appears, and every frame after.
PROBE = """
window.__bench = { firstRow: null, frames: [], longTasks: [], renders: [], raf: window.requestAnimationFrame.bind(window) };
// The page's own frame callbacks (its renders), timed.
window.requestAnimationFrame = (callback) => window.__bench.raf((time) => {
  const started = performance.now();
  callback(time);
  window.__bench.renders.push(performance.now() - started);
});
new MutationObserver((changes, observer) => {
  const list = document.getElementById("list");
  if (list && list.children.length > 0 && window.__bench.firstRow === null) {
    window.__bench.firstRow = performance.now();
    observer.disconnect();
  }
}).observe(document, { childList: true, subtree: true });
try {
  new PerformanceObserver((entries) => {
    for (const entry of entries.getEntries()) window.__bench.longTasks.push(entry.duration);
  }).observe({ type: "longtask", buffered: true });
} catch (error) {}
"""

FRAMES = """
const done = arguments[arguments.length - 1];
const seconds = arguments[0];
const frames = [];
let last = null;
const renders = window.__bench.renders.length;
const end = performance.now() + seconds * 1000;
function tick(now) {
  if (last !== null) frames.push(now - last);
  last = now;
  if (now < end) window.__bench.raf(tick);
  else done({ frames, longTasks: window.__bench.longTasks, renders: window.__bench.renders.slice(renders),
              rows: document.querySelectorAll("#list li").length,
              info: document.getElementById("page-info").textContent });
}
window.__bench.raf(tick);
"""


def say(message):
    print(f"bench-page: {message}", file=sys.stderr, flush=True)


def measure(process, page, count, seconds):
    idle = bench_daemon.cpu_over(process.pid, seconds)
    driver = browser.chromium(1280, 900)
    try:
        driver.execute_cdp_cmd("Page.setBypassCSP", {"enabled": True})
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": PROBE})
        driver.get(f"{page}/#token={bench_daemon.SECRET}")
        deadline = time.monotonic() + 30
        first = None
        while time.monotonic() < deadline and first is None:
            first = driver.execute_script("return window.__bench && window.__bench.firstRow")
            time.sleep(0.05)
        if first is None:
            sys.exit("bench-page: no row appeared within 30 s")
        _, cpu0 = bench_daemon.process_stats(process.pid)
        started = time.monotonic()
        result = driver.execute_async_script(FRAMES, seconds)
        _, cpu1 = bench_daemon.process_stats(process.pid)
        open_cpu = (cpu1 - cpu0) / (time.monotonic() - started)
        if not result["info"].endswith(f"of {count}"):
            sys.exit(f"bench-page: the page shows {result['info']!r}, not {count} downloads")
        frames = result["frames"]
        renders = result["renders"] or [0.0]
        return {"first": first, "p50": bench_daemon.percentile(frames, 0.5), "p95": bench_daemon.percentile(frames, 0.95), "max": max(frames),
                "render_p95": bench_daemon.percentile(renders, 0.95), "render_max": max(renders), "renders": len(result["renders"]),
                "long": len(result["longTasks"]), "rows": result["rows"], "idle_cpu": idle, "open_cpu": open_cpu}
    finally:
        driver.quit()


def main():
    parser = benchlib.argument_parser(__doc__)
    parser.add_argument("--swoop", required=True)
    parser.add_argument("--nginx", required=True)
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="bench-page-", dir=os.path.expanduser("~"))
    nginx, url = bench_daemon.serve_slow_file(args.nginx, work, "bench-page")
    process, rpc = bench_daemon.start_daemon("swoop", os.path.abspath(args.swoop), os.path.join(work, "swoop"))
    results = []
    try:
        bench_daemon.add_many(rpc, url, args.count)
        page = f"http://127.0.0.1:{rpc.connection.port}"
        time.sleep(2)
        for run in range(args.runs):
            r = measure(process, page, args.count, args.seconds)
            results.append(r)
            say(f"run {run + 1}: first render {r['first']:.0f} ms; frame intervals p50 {r['p50']:.1f} ms p95 {r['p95']:.1f} ms "
                f"max {r['max']:.1f} ms; {r['renders']} renders, p95 {r['render_p95']:.2f} ms max {r['render_max']:.2f} ms; {r['long']} long tasks; {r['rows']} rows in the DOM; daemon CPU "
                f"{r['idle_cpu'] * 100:.1f}% without the page, {r['open_cpu'] * 100:.1f}% with it")
    finally:
        process.terminate()
        process.wait(timeout=30)
        benchlib.stop_nginx(nginx)

    def med(key):
        return statistics.median(r[key] for r in results)

    print(f"\n### The page with {args.count} downloads, 16 active ({args.runs} runs, {args.seconds:.0f} s of updates each)\n")
    print("| first render ms | frame interval p50 ms | p95 ms | max ms | render p95 ms | render max ms | long tasks | rows in DOM | daemon CPU, no page | daemon CPU, page open |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(f"| {med('first'):.0f} | {med('p50'):.1f} | {med('p95'):.1f} | {med('max'):.1f} | {med('render_p95'):.2f} | {med('render_max'):.2f} "
          f"| {med('long'):.0f} | {med('rows'):.0f} "
          f"| {med('idle_cpu') * 100:.1f}% | {med('open_cpu') * 100:.1f}% |")


if __name__ == "__main__":
    benchlib.run_main(main, "bench-page")
