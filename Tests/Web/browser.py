"""Shared by the page's browser tests: a headless Chromium driven by Selenium, and a small
static file server on 127.0.0.1 (port 0). Debian's chromium and chromium-driver are used as
installed (Selenium is told where they are, so it never looks for a driver on the network)."""

import http.server
import os
import shutil
import subprocess
import threading

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def chromium(width=1280, height=900):
    """A headless Chromium window of this size (CSS pixels)."""
    options = webdriver.ChromeOptions()
    for path in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"):
        if os.path.exists(path):
            options.binary_location = path
            break
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--disable-extensions", "--disable-background-networking",
                     f"--window-size={width},{height}"):
        options.add_argument(argument)
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    browser = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    browser.set_page_load_timeout(30)
    browser.set_script_timeout(30)
    return browser


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def serve(routes):
    """Serves directories on 127.0.0.1 at a free port: `routes` maps URL prefixes ("/ui/") to
    directories. Returns (server, port); stop with server.shutdown()."""

    class Handler(_QuietHandler):
        def translate_path(self, path):
            path = path.split("?", 1)[0].split("#", 1)[0]
            for prefix, directory in routes.items():
                if path.startswith(prefix):
                    relative = os.path.normpath(path[len(prefix):]).lstrip("/")
                    if relative.startswith(".."):
                        break
                    return os.path.join(directory, relative)
            return "/nonexistent"

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def stop(processes, timeout=20):
    """Stops daemons as a user would (SIGTERM), all at once, killing those that outlast `timeout`."""
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
