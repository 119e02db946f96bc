"""The web inspector at GET / (issue #13) in headless Chromium (Debian's chromium + chromium-driver, selenium): it
loads with no request outside the daemon, lists the demo catalog's tips, and shows a tip's status change caused by
another client. With TIPSD_INSPECTOR_SCREENSHOT=PATH it also saves the README's screenshot (docs/inspector.png:
`scripts/inspector-screenshot`).

Waits are for conditions (selenium's WebDriverWait with harness.TIMEOUT as the hang guard), never for time."""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.request

import harness
from test_websocket import WebDaemon

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
DEMO = harness.REPO / "catalog" / "demo.json"


def wait(driver, condition, what: str):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, harness.TIMEOUT, poll_frequency=0.05).until(condition, f"timed out waiting for {what}")


def cell(driver, selector: str) -> str | None:
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", selector
    )


def requested_urls(driver) -> list[str]:
    """Every URL the page asked for: Chrome's network log (requests and WebSockets) and the resource timing API."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
        elif message["method"] == "Network.webSocketCreated":
            urls.append(message["params"]["url"])
    urls += driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    return urls


def test_the_inspector_is_self_contained_lists_the_demo_tips_and_follows_another_clients_donation(
    daemon_factory, browser
):
    web = WebDaemon(
        daemon_factory,
        "--catalog",
        str(DEMO),
        "--app-closed-event",
        "app.backgrounded",
        "--close-rate-alert",
        "0.3",
        "--clock-start",
        "1767225600",
    )
    origin = f"http://127.0.0.1:{web.port}"
    with urllib.request.urlopen(origin + "/", timeout=harness.TIMEOUT) as response:
        policy = response.headers["Content-Security-Policy"]
        page = response.read().decode()
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "style-src 'self'" in policy
    assert f"connect-src ws://127.0.0.1:{web.port}" in policy
    assert "<script>" not in page, "no inline script"
    assert not re.findall(r'(?:src|href)="(?!/[a-z])', page), "every resource is the daemon's own (a path)"

    browser.get(f"{origin}/#token={web.token}")
    wait(browser, lambda d: d.execute_script("return document.body.dataset.state") == "connected", "the connection")
    demo_tips = [tip["id"] for tip in json.loads(DEMO.read_text())["tips"]]
    listed = wait(
        browser,
        lambda d: d.execute_script(
            "const ids = [...document.querySelectorAll('#tips tr[data-tip]')].map(r => r.dataset.tip);"
            "return ids.length ? ids : null;"
        ),
        "the tips",
    )
    assert listed == demo_tips
    assert web.token not in browser.current_url, "the token leaves the address bar at once"
    assert cell(browser, 'tr[data-tip="filter.tip"] .status') == "pending"

    # Another client donates: the page follows without reloading (inspect/changed and tips/shouldDisplayChanged).
    app = web.daemon.connect()
    assert "result" in app.request("initialize", {"protocolVersion": "1.1", "clientInfo": {"name": "other"}})
    for _ in range(3):
        assert "result" in app.request("events/donate", {"id": "search.opened"})
    wait(browser, lambda d: cell(d, 'tr[data-tip="filter.tip"] .status') == "available", "filter.tip available")
    wait(browser, lambda d: cell(d, 'tr[data-tip="filter.tip"] .should-display') == "yes", "shouldDisplay yes")
    wait(browser, lambda d: cell(d, 'tr[data-event="search.opened"] .count') == "3", "the donation count")

    # --allow-testing: the page's own buttons act (a donation, then an invalidation).
    browser.execute_script("document.querySelector('tr[data-event=\"filter.used\"] button').click()")
    wait(browser, lambda d: cell(d, 'tr[data-event="filter.used"] .count') == "1", "the page's donation")
    wait(browser, lambda d: cell(d, 'tr[data-tip="filter.tip"] .status') == "pending", "filter.tip pending again")
    browser.execute_script("document.querySelector('tr[data-tip=\"show-location.tip\"] button').click()")
    wait(
        browser,
        lambda d: (cell(d, 'tr[data-tip="show-location.tip"] .status') or "").startswith("invalidated"),
        "the page's invalidation",
    )
    wait(
        browser,
        lambda d: d.execute_script("return document.querySelectorAll('#feed li').length") >= 1,
        "the lifecycle feed",
    )
    wait(
        browser,
        lambda d: (
            d.execute_script("return document.querySelectorAll('#metrics [data-metrics] svg').length") == len(demo_tips)
        ),
        "the charts",
    )

    # Issue #25: another client suppresses tips: the banner shows it and why; the page's Resume ends it.
    assert app.request("tips/suppress", {"seconds": 600, "reason": "checkout"})["result"]["suppressed"] is True
    wait(browser, lambda d: "checkout" in (cell(d, "#suppression") or ""), "the suppression banner")
    wait(
        browser, lambda d: "suppressed until" in (cell(d, 'tr[data-tip="welcome.tour"] summary') or ""), "the tip's why"
    )
    browser.execute_script('document.getElementById("resume-button").click()')
    wait(browser, lambda d: d.execute_script("return document.getElementById('suppression').hidden"), "the resume")

    urls = requested_urls(browser)
    assert urls, "the network log is empty"
    outside = [u for u in urls if not (u.startswith(origin + "/") or u.startswith(f"ws://127.0.0.1:{web.port}/"))]
    assert not outside, f"requests outside the daemon: {outside}"
    problems = [e["message"] for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert not problems, problems
    assert web.token not in web.daemon.log()

    if os.environ.get("TIPSD_INSPECTOR_SCREENSHOT"):
        make_screenshot(browser, app, os.environ["TIPSD_INSPECTOR_SCREENSHOT"])


def make_screenshot(browser, app, path: str) -> None:
    """A week of a two-variant tip, for the README: impressions, goals, app closes, one variant over the alert."""
    tip = {
        "id": "search.tip",
        "title": "Search remembers your filters",
        "variants": {"friendly": {"title": "Your filters, remembered"}, "direct": {"title": "Filters are saved"}},
        "actions": [{"id": "show-me", "title": "Show me"}],
        "goal": {"event": "filters.saved", "within": {"hours": 24}},
        "options": {"ignoresDisplayFrequency": True},
    }
    app.request("tips/register", {"tips": [tip]})
    for _ in range(6):  # a week of the feature's use before the tip shows: the goal rate's baseline
        app.request("events/donate", {"id": "filters.saved"})
        app.request("clock/advance", {"seconds": 86400})
    app.request("clock/advance", {"seconds": 86400})
    for day in range(6):
        app.request("events/donate", {"id": "filters.saved"} if day % 3 == 0 else {"id": "search.opened"})
        for variant, converts, closes in (("friendly", day % 2 == 0, False), ("direct", day % 3 == 0, day % 2 == 1)):
            app.request("tips/setVariant", {"id": "search.tip", "variant": variant})
            app.request("tips/displayed", {"id": "search.tip", "duration": 3 + day})
            app.request("clock/advance", {"seconds": 4})
            if closes:
                app.request("events/donate", {"id": "app.backgrounded"})
            if converts:
                app.request("clock/advance", {"seconds": 1800})
                app.request("events/donate", {"id": "filters.saved"})
        app.request("clock/advance", {"seconds": 86400})
    app.request("tips/displayed", {"id": "filter.tip", "duration": 5})
    app.request("tips/performAction", {"id": "filter.tip", "actionId": "learn-more"})
    wait(
        browser,
        lambda d: d.execute_script(
            "const c = document.querySelector('[data-metrics=\"search.tip\"] svg'); return c && c.querySelectorAll('rect').length === 4"
        ),
        "the variant chart",
    )
    wait(
        browser,
        lambda d: (cell(d, 'tr[data-tip="filter.tip"] .status') or "").startswith("invalidated"),
        "the last change",
    )
    browser.execute_script("window.scrollTo(0, 0)")
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(max(height + 40, 900), 2400))
    browser.save_screenshot(path)


def test_the_embedded_inspector_is_up_to_date():
    import subprocess

    r = subprocess.run([str(harness.REPO / "scripts" / "embed-inspector"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + r.stdout
