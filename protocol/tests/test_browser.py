"""Headless Chromium (Debian's chromium + chromium-driver, driven by selenium) loads a page that imports the
TypeScript client's browser build (clients/typescript/dist-browser, no bundler) and talks to the real daemon over
its WebSocket listener: the FilterTip flow, a shouldDisplay notification, an action with its array payload (#11)."""

from __future__ import annotations

import functools
import http.server
import json
import pathlib
import shutil
import subprocess
import threading

import pytest

import harness
from test_websocket import WebDaemon

REPO = harness.REPO
TS = REPO / "clients" / "typescript"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>tipsd browser test</title>
<pre id="result">running</pre>
<script type="module">
import { connectWebSocket } from "./dist-browser/index.js";
const hash = new URLSearchParams(location.hash.slice(1));
history.replaceState(null, "", location.pathname);  // the token leaves the address bar at once
const FILTER = %(filter)s;
const out = {};
function until(condition, what) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const poll = () => {
      if (condition()) return resolve();
      if (Date.now() - started > %(timeout_ms)d) return reject(new Error("timed out waiting for " + what));
      setTimeout(poll, 5);
    };
    poll();
  });
}
try {
  const tips = await connectWebSocket(hash.get("url"), { token: hash.get("token"), strict: true, logger: null });
  out.state = tips.state;
  await tips.register([FILTER]);
  const seen = [];
  tips.observe("filter.tip", (change) => seen.push(change.shouldDisplay));
  const actions = [];
  tips.onAction((event) => actions.push(event));
  await until(() => seen.length === 1, "the initial state");
  for (let i = 0; i < 3; i++) out.count = (await tips.donate("search.opened")).count;
  await until(() => seen.length === 2, "shouldDisplay true");
  const state = await tips.performAction("filter.tip", "learn-more");
  out.status = state.status;
  out.reason = state.reason;
  await until(() => actions.length === 1 && seen.length === 3, "the action and shouldDisplay false");
  out.seen = seen;
  out.actions = actions;
  await tips.close();
} catch (error) {
  out.error = String(error);
}
document.getElementById("result").textContent = JSON.stringify(out);
</script>
"""


def browser_build() -> pathlib.Path:
    """clients/typescript/dist-browser, built with Debian's tsc when missing (make test builds it first)."""
    out = TS / "dist-browser"
    if not (out / "index.js").exists():
        tsc = shutil.which("tsc")
        if not tsc:
            pytest.fail("the browser build is missing and tsc is not installed (apt-get install node-typescript)")
        subprocess.run([tsc, "-p", str(TS / "tsconfig.browser.json")], check=True)
        (out / "package.json").write_text('{"type": "module"}\n')
    return out


class Site:
    """The test page and the browser build, served over loopback HTTP on a port of its own."""

    def __init__(self, tmp_path: pathlib.Path, page: str):
        shutil.copytree(browser_build(), tmp_path / "dist-browser")
        (tmp_path / "index.html").write_text(page)
        handler = functools.partial(QuietHandler, directory=str(tmp_path))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript"}

    def log_message(self, *args):
        pass


@pytest.fixture
def chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-extensions",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(harness.TIMEOUT)
    yield driver
    driver.quit()


def page_result(driver) -> dict:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, harness.TIMEOUT).until(lambda d: d.find_element("id", "result").text != "running")
    return json.loads(driver.find_element("id", "result").text)


def test_filter_tip_in_headless_chromium(daemon_factory, chromium, tmp_path):
    site = Site(tmp_path, PAGE % {"filter": json.dumps(harness.FILTER_TIP), "timeout_ms": int(harness.TIMEOUT * 1000)})
    try:
        web = WebDaemon(daemon_factory, "--allow-origin", site.origin)
        chromium.get(f"{site.origin}/index.html#url={web.url}&token={web.token}")
        result = page_result(chromium)
        logs = [entry["message"] for entry in chromium.get_log("browser")]
        assert "error" not in result, (result, logs)
        assert result["state"] == "connected"
        assert result["count"] == 3
        assert result["seen"] == [False, True, False]
        assert result["status"] == "invalidated" and result["reason"] == "actionPerformed"
        assert result["actions"] == [
            {"tipId": "filter.tip", "actions": [{"id": "learn-more", "title": "Learn more", "index": 0}]}
        ]
        assert web.token not in chromium.current_url, "the page takes the token out of the address bar"
        assert web.token not in web.daemon.log()
    finally:
        site.close()


def test_a_page_from_another_origin_is_refused(daemon_factory, chromium, tmp_path):
    """Cross-site WebSocket hijacking: without --allow-origin the page's origin is refused (403)."""
    site = Site(tmp_path, PAGE % {"filter": json.dumps(harness.FILTER_TIP), "timeout_ms": int(harness.TIMEOUT * 1000)})
    try:
        web = WebDaemon(daemon_factory)
        chromium.get(f"{site.origin}/index.html#url={web.url}&token={web.token}")
        result = page_result(chromium)
        assert "error" in result, result
        assert "refused a WebSocket upgrade" in web.daemon.log() and "status=403" in web.daemon.log()
    finally:
        site.close()
