#!/usr/bin/env python3
"""A fleet's web page in a real browser: two `swoop daemon --store … --node …` sharing one
PostgreSQL queue, the page of the first in headless Chromium (Selenium).

    PGPASSWORD=… python3 Tests/Web/fleet_page_test.py --swoop .build/debug/swoop --store postgres://USER@HOST:PORT/DB

Checks, as a user would see them: the page lists both nodes; two URLs added on the page reach
"complete" wherever they ran, each file byte-exact in exactly one daemon's directory; a slow one is
paused and resumed from the page whichever daemon runs it. The helpers (file server, waits, the
list's rows) are page_test.py's. Each check prints `ok: …`; the first failure prints `FAIL: …` and
exits 1. Every wait is bounded."""

import argparse
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
from page_test import FILES, Failure, Files, check, item, state_of, wait  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402


def node_names(driver):
    if not driver.find_element(By.ID, "nodes-panel").is_displayed():
        return None
    return sorted(row.find_element(By.CSS_SELECTOR, "td").text for row in driver.find_elements(By.CSS_SELECTOR, "#nodes-rows tr"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--swoop", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--artifacts", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "artifacts", "web-fleet"))
    args = parser.parse_args()
    args.swoop = os.path.abspath(args.swoop)
    shutil.rmtree(args.artifacts, ignore_errors=True)
    os.makedirs(args.artifacts, exist_ok=True)
    work = tempfile.mkdtemp(prefix="swoop-fleet-page-")
    files = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Files)
    threading.Thread(target=files.serve_forever, daemon=True).start()
    source = f"http://127.0.0.1:{files.server_address[1]}"
    outs = {}

    def start_daemon(node):
        state, out = os.path.join(work, node, "state"), os.path.join(work, node, "out")
        os.makedirs(out)
        outs[node] = out
        daemon = subprocess.Popen([args.swoop, "daemon", "--listen", "127.0.0.1:0", "--state-dir", state, "-d", out,
                                   "--secret", "s3cret", "--log-level", "warning", "--store", args.store, "--node", node, "--lease", "4"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
        return daemon, state

    daemons = []
    driver = None
    try:
        alpha, state = start_daemon("alpha")
        daemons.append(alpha)
        daemons.append(start_daemon("beta")[0])
        info_path = os.path.join(state, "daemon.json")
        info = wait("the first daemon started", lambda: json.load(open(info_path)) if os.path.exists(info_path) else None, 20)
        page = info["url"].rstrip("/")
        driver = browser.chromium(1280, 900)
        driver.get(f"{page}/#token=s3cret")
        wait("the page connects", lambda: driver.find_element(By.ID, "connection").text == "Connected", 15)
        wait("the page lists both nodes of the fleet", lambda: node_names(driver) == ["alpha", "beta"], 20)
        port = page.rsplit(":", 1)[1]
        wait("with the address each listens on", lambda: all(
            row.find_elements(By.CSS_SELECTOR, "td")[1].text.startswith("127.0.0.1:") and not row.find_elements(By.CSS_SELECTOR, "td")[1].text.endswith(":0")
            for row in driver.find_elements(By.CSS_SELECTOR, "#nodes-rows tr")) and port in driver.find_element(By.ID, "nodes-rows").text, 10)

        driver.find_element(By.ID, "urls").send_keys(f"{source}/a.bin\n{source}/slow.bin")
        driver.find_element(By.XPATH, "//button[normalize-space()='Add']").click()
        # slow.bin first: it takes 7.5 s, and on a loaded machine a.bin's "complete" can come later
        # than that (CI once saw slow.bin done before the test looked for it running).
        wait("slow.bin is active", lambda: state_of(driver, "slow.bin") == "active", 20, shown=lambda: state_of(driver, "slow.bin"))
        driver.save_screenshot(os.path.join(args.artifacts, "1280-fleet.png"))
        item(driver, "slow.bin").find_element(By.CSS_SELECTOR, "button[aria-label='Pause slow.bin']").click()
        wait("slow.bin is paused, wherever it ran", lambda: state_of(driver, "slow.bin") == "paused", 20, shown=lambda: state_of(driver, "slow.bin"))
        driver.execute_script("document.getElementById('nodes-panel').scrollIntoView()")
        driver.save_screenshot(os.path.join(args.artifacts, "1280-nodes.png"))
        wait("a.bin reaches complete", lambda: state_of(driver, "a.bin") == "complete", 40, shown=lambda: state_of(driver, "a.bin"))
        item(driver, "slow.bin").find_element(By.CSS_SELECTOR, "button[aria-label='Resume slow.bin']").click()
        wait("slow.bin completes after the resume", lambda: state_of(driver, "slow.bin") == "complete", 60)
        for name in ("a.bin", "slow.bin"):
            places = [out for out in outs.values() if os.path.exists(os.path.join(out, name))]
            check(len(places) == 1, f"{name} is in exactly one daemon's directory ({places})")
            got = hashlib.sha256(open(os.path.join(places[0], name), "rb").read()).hexdigest()
            check(got == hashlib.sha256(FILES[name]).hexdigest(), f"{name} is byte-exact")
        print("PASS: the fleet's page in Chromium", flush=True)
        return 0
    except Failure as failure:
        print(f"FAIL: {failure}", flush=True)
        if driver:
            driver.save_screenshot(os.path.join(args.artifacts, "failure.png"))
        return 1
    finally:
        if driver:
            driver.quit()
        browser.stop(daemons)
        files.shutdown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
