import pathlib
import shutil
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import harness  # noqa: E402


@pytest.fixture(scope="session")
def contract():
    return harness.Contract()


@pytest.fixture
def observer(contract):
    obs = harness.Observer(contract)
    yield obs
    obs.assert_clean()


@pytest.fixture
def daemon_factory(observer):
    started = []

    def start(transport="stdio", *extra_args, base_args=None):
        d = harness.Daemon(transport, extra_args, observer=observer, base_args=base_args)
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


def pytest_report_header(config):
    return f"tipsd: {harness.tipsd_bin()}"


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture
def browser():
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
        "--window-size=1400,1500",
        "--hide-scrollbars",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(harness.TIMEOUT)
    yield driver
    driver.quit()
