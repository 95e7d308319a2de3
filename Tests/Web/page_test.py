#!/usr/bin/env python3
"""The web page in a real browser: headless Chromium (Selenium) against a real `swoop daemon`.

    python3 Tests/Web/page_test.py --swoop .build/debug/swoop [--artifacts DIR]

Starts a private file server and a daemon on 127.0.0.1 (port 0 both), opens the page with the
token and checks, as a user would see it: the token leaves the address bar; two URLs added at once
both reach "complete" with byte-exact files (progress bars at 100); a slow download is paused and
resumed from where it stopped (a Range request) and completes byte-exact; a finished one is
removed from the list; a wrong token is said to be wrong; the page fits 360 px and 1280 px wide.
Screenshots go to --artifacts (default: artifacts/web in the work tree, not committed). Each
check prints `ok: …`; the first failure prints `FAIL: …` and exits 1. Every wait is bounded."""

import argparse
import hashlib
import http.server
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

FILES = {
    "a.bin": random.Random(1).randbytes(300_000),
    "b.bin": random.Random(2).randbytes(200_000),
    "slow.bin": random.Random(3).randbytes(3_000_000),
}
SLOW_RATE = 400_000  # bytes per second for slow.bin
ranges_seen = []


class Files(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        name = self.path.lstrip("/").split("?")[0]
        body = FILES.get(name)
        if body is None:
            self.send_error(404)
            return
        start, status = 0, 200
        header = self.headers.get("Range")
        if header and header.startswith("bytes="):
            ranges_seen.append((name, header))
            first = header[6:].split("-")[0]
            if first.isdigit() and int(first) < len(body):
                start, status = int(first), 206
        self.send_response(status)
        self.send_header("Content-Length", str(len(body) - start))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{hashlib.sha256(body).hexdigest()[:16]}"')
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.end_headers()
        chunk = 16_384
        try:
            for offset in range(start, len(body), chunk):
                self.wfile.write(body[offset:offset + chunk])
                if name == "slow.bin":
                    time.sleep(chunk / SLOW_RATE)
        except (BrokenPipeError, ConnectionResetError):
            pass


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)
    print(f"ok: {what}", flush=True)


def wait(what, probe, timeout=30, shown=None):
    """Waits for `probe` to give a true value, at most `timeout` seconds. On failure, `shown` (a
    function) says what the page showed instead."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = probe()
        except StaleElementReferenceException:
            # The list re-rendered under the probe: look again.
            value = None
        if value:
            print(f"ok: {what}", flush=True)
            return value
        time.sleep(0.1)
    instead = ""
    if shown:
        try:
            instead = f"; the page shows {shown()!r}"
        except Exception as error:  # noqa: BLE001 - said, not raised: the failure is the wait's
            instead = f"; reading the page failed: {error}"
    raise Failure(f"{what} (waited {timeout} s{instead})")


def item(driver, name):
    # The list re-renders as events arrive: an element found a moment ago may be gone (stale). Look
    # again, a bounded number of times.
    for _ in range(50):
        try:
            for li in driver.find_elements(By.CSS_SELECTOR, "#list li"):
                if li.find_element(By.CSS_SELECTOR, ".name").text == name:
                    return li
            return None
        except StaleElementReferenceException:
            time.sleep(0.02)
    raise Failure(f"the list kept changing while looking for {name}")


def file_link(driver, name):
    li = item(driver, name)
    links = li.find_elements(By.CSS_SELECTOR, ".name a[href]") if li else []
    return links[0].get_attribute("href") if links and links[0].is_displayed() else None


def rpc(page, method, *params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": ["token:s3cret", *params]}).encode()
    request = urllib.request.Request(f"{page}/jsonrpc", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)["result"]


def state_of(driver, name):
    li = item(driver, name)
    return li.find_element(By.CSS_SELECTOR, ".state").text if li else None


def progress_of(driver, name):
    li = item(driver, name)
    if not li:
        return None
    value = li.find_element(By.CSS_SELECTOR, "[role=progressbar]").get_attribute("aria-valuenow")
    return int(value) if value is not None else None


def open_alert(driver):
    try:
        return driver.switch_to.alert
    except NoAlertPresentException:
        return None


def fits(driver):
    return driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--swoop", required=True)
    parser.add_argument("--artifacts", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "artifacts", "web"))
    args = parser.parse_args()
    args.swoop = os.path.abspath(args.swoop)
    shutil.rmtree(args.artifacts, ignore_errors=True)
    os.makedirs(args.artifacts, exist_ok=True)
    work = tempfile.mkdtemp(prefix="swoop-page-")
    out, state = os.path.join(work, "out"), os.path.join(work, "state")
    os.makedirs(out)
    files = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Files)
    threading.Thread(target=files.serve_forever, daemon=True).start()
    source = f"http://127.0.0.1:{files.server_address[1]}"
    def start_daemon(listen="127.0.0.1:0"):
        return subprocess.Popen([args.swoop, "daemon", "--listen", listen, "--state-dir", state, "-d", out,
                                 "--secret", "s3cret", "--log-level", "warning"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)

    daemon = start_daemon()
    driver = None
    try:
        info = wait("the daemon started", lambda: json.load(open(os.path.join(state, "daemon.json"))) if os.path.exists(os.path.join(state, "daemon.json")) else None, 20)
        page = info["url"].rstrip("/")
        driver = browser.chromium(1280, 900)

        driver.get(f"{page}/")
        wait("without a token the page asks for the secret", lambda: driver.find_element(By.ID, "login").is_displayed())
        check(not driver.find_element(By.ID, "app").is_displayed(), "and shows no downloads")
        driver.get(f"{page}/#token=s3cret")
        wait("the page connects with the token from the address", lambda: driver.find_element(By.ID, "connection").text == "Connected", 15)
        check("token" not in driver.current_url, f"the token left the address bar ({driver.current_url})")
        label = driver.find_element(By.CSS_SELECTOR, "label[for=urls]").text
        check(label == "URLs", "the URL box is labelled URLs")

        def add(*names):
            driver.find_element(By.ID, "urls").send_keys("\n".join(f"{source}/{name}" for name in names))
            driver.find_element(By.XPATH, "//button[normalize-space()='Add']").click()

        def check_byte_exact(name):
            got = hashlib.sha256(open(os.path.join(out, name), "rb").read()).hexdigest()
            check(got == hashlib.sha256(FILES[name]).hexdigest(), f"{name} is byte-exact")

        add("a.bin", "b.bin")
        for name in ("a.bin", "b.bin"):
            wait(f"{name} reaches complete", lambda: state_of(driver, name) == "complete")
            wait(f"{name}'s progress bar says 100", lambda: progress_of(driver, name) == 100)
            check_byte_exact(name)
        href = wait("a.bin's name links to its file", lambda: file_link(driver, "a.bin"))
        check("token" not in href and "s3cret" not in href, f"the link carries no secret ({href})")
        with urllib.request.urlopen(href, timeout=10) as answer:
            check(answer.read() == FILES["a.bin"], "the link serves a.bin byte-exact")
            check(answer.headers["Content-Disposition"].startswith("attachment;"), "as an attachment")
        driver.save_screenshot(os.path.join(args.artifacts, "1280-complete.png"))
        check(not driver.find_element(By.ID, "nodes-panel").is_displayed(), "a daemon outside a fleet shows no nodes")

        add("slow.bin")
        wait("slow.bin is active and under way", lambda: state_of(driver, "slow.bin") == "active" and (progress_of(driver, "slow.bin") or 0) >= 5)
        driver.save_screenshot(os.path.join(args.artifacts, "1280-active.png"))
        item(driver, "slow.bin").find_element(By.CSS_SELECTOR, "button[aria-label='Pause slow.bin']").click()
        wait("slow.bin is paused", lambda: state_of(driver, "slow.bin") == "paused")
        paused_at = progress_of(driver, "slow.bin")
        check(paused_at is not None and paused_at < 100, f"paused part way ({paused_at}%)")
        item(driver, "slow.bin").find_element(By.CSS_SELECTOR, "button[aria-label='Resume slow.bin']").click()
        wait("slow.bin completes after the resume", lambda: state_of(driver, "slow.bin") == "complete", 40)
        check_byte_exact("slow.bin")
        check(any(name == "slow.bin" and not header.startswith("bytes=0-") for name, header in ranges_seen),
              f"the resume asked for the rest with a Range ({[h for n, h in ranges_seen if n == 'slow.bin']})")

        item(driver, "slow.bin").find_element(By.CSS_SELECTOR, "button[aria-label='Details of slow.bin']").click()
        dialog = driver.find_element(By.ID, "details")
        wait("the details show the URL and the ETag", lambda: dialog.is_displayed() and f"{source}/slow.bin" in dialog.text and "ETag" in dialog.text)
        driver.save_screenshot(os.path.join(args.artifacts, "1280-details.png"))
        driver.find_element(By.ID, "details-close").click()

        # Removed with its file, through the selection.
        item(driver, "b.bin").find_element(By.CSS_SELECTOR, "input[aria-label='Select b.bin']").click()
        driver.find_element(By.ID, "with-files").click()
        driver.find_element(By.ID, "remove-selected").click()
        alert = wait("deleting files asks first", lambda: open_alert(driver))
        check("delete its file" in alert.text, f"the question names it ({alert.text!r})")
        alert.accept()
        wait("b.bin leaves the list", lambda: item(driver, "b.bin") is None)
        wait("b.bin's file is deleted", lambda: not os.path.exists(os.path.join(out, "b.bin")))
        check(os.path.exists(os.path.join(out, "a.bin")), "a.bin's file stays")

        # The global limits, changed live.
        for field, value in (("max-concurrent", "2"), ("max-speed", "500K")):
            box = driver.find_element(By.ID, field)
            box.clear()
            box.send_keys(value)
        driver.find_element(By.XPATH, "//button[normalize-space()='Apply limits']").click()
        wait("the daemon took the new limits", lambda: (lambda o: o.get("max-concurrent-downloads") == "2" and o.get("max-overall-download-limit") == "512000")(rpc(page, "aria2.getGlobalOption")))
        wait("the page shows them as written", lambda: driver.find_element(By.ID, "max-speed").get_attribute("value") == "500K")

        # The daemon restarts (same address): the page reconnects by itself, still holding its token.
        daemon.terminate()
        daemon.wait(timeout=30)
        wait("the page says the daemon is gone", lambda: "Connected" != driver.find_element(By.ID, "connection").text, 15)
        check(driver.find_element(By.ID, "app").is_displayed(), "and keeps the list rather than asking for the secret")
        daemon = start_daemon(page.split("//", 1)[1])
        wait("the page reconnects once the daemon is back", lambda: driver.find_element(By.ID, "connection").text == "Connected", 40)
        wait("and lists the downloads again", lambda: state_of(driver, "a.bin") == "complete", 15)

        check(fits(driver), "nothing overflows 1280 px")
        driver.set_window_size(360, 800)
        time.sleep(0.3)
        check(fits(driver), "nothing overflows 360 px")
        driver.save_screenshot(os.path.join(args.artifacts, "360-list.png"))

        driver.execute_script("sessionStorage.clear()")
        driver.get(f"{page}/#token=wrong")
        wait("a wrong token is said to be wrong", lambda: "Wrong secret" in driver.find_element(By.ID, "login-error").text, 15)
        driver.save_screenshot(os.path.join(args.artifacts, "360-wrong-token.png"))
        print("PASS: the page in Chromium", flush=True)
        return 0
    except Failure as failure:
        print(f"FAIL: {failure}", flush=True)
        if driver:
            driver.save_screenshot(os.path.join(args.artifacts, "failure.png"))
        return 1
    finally:
        if driver:
            driver.quit()
        browser.stop([daemon])
        files.shutdown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
