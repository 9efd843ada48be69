"""The console in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) through Selenium.

A server is started, rows are written through the official SDK into a
pre-split table until a region splits (and one region holds a hot partition
key), then the overview, the table page with its region bars and the row
browser are opened, checked, paged through, and saved as screenshots (under
the test's temporary directory; ``CONSOLE_SCREENSHOTS=docs/images`` saves them
where docs/console.md shows them).  No browser installed is a failure with the fix in its message,
never a skip (the README's test command installs it:
``python -m regions.otsserver.browser``).
"""
import os
import shutil

import pytest

from consoleserver import HOSTILE, create_events, put_rows, sdk, start, wait_for

SCREENSHOTS_ENV = "CONSOLE_SCREENSHOTS"


def _navigate(browser, element):
    """Click ``element`` and wait until the new page replaced the old one (so no
    element of the old page is found afterwards: a stale-element flake).

    The old page is marked with a window property and the wait is for a
    complete document without the mark.  Watching the old ``<html>`` element go
    stale instead races with chromedriver: asked about a node while the
    document is being replaced, it may answer "Node with given id does not
    belong to the document" (an unknown error, not a stale element)."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait
    browser.execute_script("window.__consoleOldPage = true;")
    element.click()

    def replaced(driver):
        try:
            return driver.execute_script(
                "return window.__consoleOldPage === undefined && "
                "document.readyState === 'complete';")
        except WebDriverException:      # mid-navigation: ask again
            return False
    WebDriverWait(browser, 10).until(replaced, "the page did not change after the click")


def _driver():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not chromium or not chromedriver:
        pytest.fail("the console's browser test needs Debian's chromium and chromium-driver: "
                    "run `python -m regions.otsserver.browser` (apt-get install -y chromium "
                    "chromium-driver)", pytrace=False)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(chromedriver), options=opts)


@pytest.fixture
def browser():
    d = _driver()
    yield d
    d.quit()


def _no_alert(browser):
    from selenium.common.exceptions import NoAlertPresentException
    try:
        browser.switch_to.alert
    except NoAlertPresentException:
        return True
    return False


def test_console_in_headless_chromium(tmp_path, browser):
    images = os.environ.get(SCREENSHOTS_ENV) or str(tmp_path)
    from selenium.webdriver.common.by import By
    srv = start(tmp_path)
    try:
        create_events(srv, split_at=("m",))
        c = sdk(srv)
        put_rows(c, "events", [("a%03d" % i, i) for i in range(300)])
        put_rows(c, "events", [("zhot", i) for i in range(300)])
        put_rows(c, "events", [(HOSTILE, i) for i in range(3)], hostile=True)

        def ready():
            import json
            from consoleserver import get
            d = json.loads(get(srv, "/tables/events?format=json")[2])
            return len(d["regions"]) >= 3 and d["recent_splits"] and \
                any(r["hot_key"] for r in d["regions"]) and \
                all(r["writes_per_second"] is not None for r in d["regions"])
        wait_for(ready, timeout=60, what="a split, a hot key and sampled write rates")
        put_rows(c, "events", [("zhot", 1000 + i) for i in range(200)])   # a hot spot now
        os.makedirs(images, exist_ok=True)
        base = "http://127.0.0.1:%d" % srv.server_address[1]

        browser.get(base + "/")
        assert browser.find_element(By.TAG_NAME, "h1").text == "Overview"
        facts = browser.find_element(By.CSS_SELECTOR, "dl.facts").text
        assert "console" in facts and "async" in facts and "Requests / s" in facts
        link = browser.find_element(By.CSS_SELECTOR, "a.table-link")
        assert link.text == "events"
        row = browser.find_element(By.CSS_SELECTOR, "table.tables tbody tr").text
        assert "pk STRING, n INTEGER" in row
        browser.save_screenshot(os.path.join(images, "console-overview.png"))

        _navigate(browser, link)
        assert browser.find_element(By.TAG_NAME, "h1").text == "Table events"
        regions = browser.find_elements(By.CSS_SELECTOR, "table.regions tbody tr")
        assert len(regions) >= 3
        first_cells = regions[0].find_elements(By.TAG_NAME, "td")
        assert first_cells[1].text == "INF_MIN" and regions[-1].find_elements(
            By.TAG_NAME, "td")[2].text == "INF_MAX"
        sizes = [float(s.get_attribute("style").split("width:")[1].split("%")[0])
                 for s in browser.find_elements(By.CSS_SELECTOR, ".bar.size span")]
        assert len(sizes) == len(regions) and max(sizes) == 100.0
        bars = browser.find_elements(By.CSS_SELECTOR, ".bar.size span")
        assert all(b.size["width"] > 0 for b in bars)
        assert len(browser.find_elements(By.CSS_SELECTOR, ".bar.writes span")) == len(regions)
        blocker = browser.find_element(By.CSS_SELECTOR, ".blocker")
        assert blocker.text == "hot partition key"
        assert '"zhot"' in blocker.find_element(By.XPATH, "..").text
        splits = browser.find_elements(By.CSS_SELECTOR, "table.splits tbody tr")
        assert splits and '"a' in splits[0].text
        browser.save_screenshot(os.path.join(images, "console-table.png"))

        _navigate(browser, browser.find_element(By.ID, "browse"))
        limit = browser.find_element(By.NAME, "limit")
        limit.clear()
        limit.send_keys("4")
        start_pk = browser.find_element(By.NAME, "start.pk")
        assert start_pk.get_attribute("value") == "INF_MIN"     # the bound in effect
        start_pk.clear()
        start_pk.send_keys("a010")
        _navigate(browser, browser.find_element(By.ID, "range-go"))
        first = browser.find_elements(By.CSS_SELECTOR, "table.rows tbody tr")
        assert [r.text.split("\n")[0] for r in first] == ['pk = "a010"', 'pk = "a011"',
                                                           'pk = "a012"', 'pk = "a013"']
        browser.save_screenshot(os.path.join(images, "console-rows.png"))
        _navigate(browser, browser.find_element(By.ID, "next-page"))
        second = browser.find_elements(By.CSS_SELECTOR, "table.rows tbody tr")
        assert [r.text.split("\n")[0] for r in second] == ['pk = "a014"', 'pk = "a015"',
                                                            'pk = "a016"', 'pk = "a017"']
        # GetRow by primary key
        browser.get(base + "/tables/events/rows")
        browser.find_element(By.NAME, "pk.pk").send_keys("zhot")
        browser.find_element(By.NAME, "pk.n").send_keys("7")
        _navigate(browser, browser.find_element(By.ID, "getrow-go"))
        (row,) = browser.find_elements(By.CSS_SELECTOR, "table.rows tbody tr")
        assert 'pk = "zhot"' in row.text and "n2 = 7" in row.text
        # rows full of markup stay inert: shown as text, no element, no alert
        browser.get(base + "/tables/events/rows?limit=3&start.pk=" + "%3C")
        text = browser.find_element(By.CSS_SELECTOR, "table.rows").text
        assert "<script>" in text and "<img src=x onerror=alert(1)>" in text
        assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script")
        assert _no_alert(browser)
    finally:
        srv.stop()
