#!/usr/bin/env python3
"""Runs the page's JavaScript unit tests (Tests/Web/*.test.js) in headless Chromium.

    python3 Tests/Web/run_js_tests.py

Serves Sources/SwoopDaemon/Web at /ui/ and this directory at /tests/ on 127.0.0.1, opens
tests.html, waits (at most 30 s) for the results, prints one line per test and exits 1 on a failure.
Needs Debian's chromium and chromium-driver and Selenium (pip)."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
web = os.path.join(here, "..", "..", "Sources", "SwoopDaemon", "Web")


def main():
    server, port = browser.serve({"/ui/": web, "/tests/": here})
    driver = browser.chromium()
    try:
        driver.get(f"http://127.0.0.1:{port}/tests/tests.html")
        deadline = time.monotonic() + 30
        results = None
        while time.monotonic() < deadline:
            results = driver.execute_script("return window.__results || null")
            if results is not None:
                break
            time.sleep(0.05)
        if results is None:
            logs = driver.get_log("browser") if hasattr(driver, "get_log") else []
            print(f"FAIL: no results within 30 s; console: {logs}")
            return 1
        failed = [r for r in results if not r["ok"]]
        for r in results:
            print(f"{'ok' if r['ok'] else 'FAIL'}: {r['name']}")
            if not r["ok"]:
                print("   " + r["error"].replace("\n", "\n   "))
        if not results:
            print("FAIL: no tests ran")
            return 1
        print(f"{'FAIL' if failed else 'PASS'}: {len(results) - len(failed)} of {len(results)} JavaScript tests")
        return 1 if failed else 0
    finally:
        driver.quit()
        server.shutdown()


if __name__ == "__main__":
    sys.exit(main())
