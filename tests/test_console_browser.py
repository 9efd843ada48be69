"""The console in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) through Selenium.

A server is started, rows are written through the official SDK into a
pre-split table (one split key longer than a key cell) until a region splits
(and one region holds a hot partition key), then the overview, the table page
with its region bars and the row browser are opened at 1280 x 800, checked
(layout too: key cells on one line, rows per screen, times as dates), paged
through, and saved as screenshots (under the test's temporary directory;
``CONSOLE_SCREENSHOTS=docs/images`` saves them where docs/console.md shows
them).  No browser installed is a failure with the fix in its message,
never a skip (the README's test command installs it:
``python -m regions.otsserver.browser``).
"""
import os
import re
import shutil

import pytest

from consoleserver import HOSTILE, create_events, put_rows, sdk, start, wait_for

SCREENSHOTS_ENV = "CONSOLE_SCREENSHOTS"
WIDTH, HEIGHT = 1280, 800           # the viewport: a laptop's browser window
#: A split key wider than a key cell: shown cut with an ellipsis, whole in its title.
LONG_KEY = "q/2024-06-01T06:03:39/user-0123456789abcdef0123456789abcdef"
#: A UTC time as the console shows it, then how long ago.
SHOWN_TIME = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (just now|\d+ (s|min) ago)$"


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
                    "run `python -m regions.otsserver.browser`", pytrace=False)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=%d,%d" % (WIDTH, HEIGHT)):
        opts.add_argument(arg)
    d = webdriver.Chrome(service=Service(chromedriver), options=opts)
    # the window's size includes the browser's frame: set the page's viewport itself
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
    return d


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


def _one_line_cells(browser, table):
    """Every key cell of ``table`` (``td.key``): [(height of its content, its
    line height, on how many lines its value's boxes lie, cut with an
    ellipsis?, the value's title)].  (A value cut with an ellipsis has
    several boxes, all on one line.)"""
    return browser.execute_script("""
        return Array.from(document.querySelectorAll(arguments[0] + ' td.key .k')).map(k => {
            const v = k.querySelector('.v, .inf');
            const tops = v ? Array.from(v.getClientRects()).map(r => Math.round(r.top)) : [0];
            return [k.getBoundingClientRect().height, parseFloat(getComputedStyle(k).lineHeight),
                    new Set(tops).size, k.scrollWidth > k.clientWidth, v ? v.title : ''];
        });""", "table." + table)


def _assert_one_line(browser, table):
    cells = _one_line_cells(browser, table)
    assert cells, table
    for height, line, lines, _cut, title in cells:
        assert lines == 1 and abs(height - line) < 1, (table, title, height, line, lines)
    return cells


def test_console_in_headless_chromium(tmp_path, browser):
    images = os.environ.get(SCREENSHOTS_ENV) or str(tmp_path)
    from selenium.webdriver.common.by import By
    srv = start(tmp_path)
    try:
        create_events(srv, split_at=("m", LONG_KEY), indexed=True, index_split_at=[150])
        c = sdk(srv)
        put_rows(c, "events", [("a%03d" % i, i) for i in range(300)])
        put_rows(c, "events", [("n%02d" % i, i) for i in range(40)])
        put_rows(c, "events", [("zhot", i) for i in range(300)])
        put_rows(c, "events", [(HOSTILE, i) for i in range(3)], hostile=True)

        def ready():
            import json
            from consoleserver import get
            d = json.loads(get(srv, "/tables/events?format=json")[2])
            return len(d["regions"]) >= 4 and d["recent_splits"] and \
                any(r["hot_key"] for r in d["regions"]) and \
                all(r["writes_per_second"] is not None for r in d["regions"])
        wait_for(ready, timeout=60, what="a split, a hot key and sampled write rates")
        put_rows(c, "events", [("zhot", 1000 + i) for i in range(200)])   # a hot spot now
        assert srv.service.client.wait_for_indexes("events")
        os.makedirs(images, exist_ok=True)
        base = "http://127.0.0.1:%d" % srv.server_address[1]

        browser.get(base + "/")
        assert browser.execute_script("return [innerWidth, innerHeight]") == [WIDTH, HEIGHT]
        assert browser.find_element(By.TAG_NAME, "h1").text == "Overview"
        facts = browser.find_element(By.CSS_SELECTOR, "dl.facts").text
        assert "console" in facts and "async" in facts and "Requests / s" in facts
        assert re.search(r"Uptime\n\d+ (s|min)\b.* \(since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)",
                         facts)
        link = browser.find_element(By.CSS_SELECTOR, "a.table-link")
        assert link.text == "events"
        cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR,
                                                         "table.tables tbody td")]
        assert cells[1] == "pk STRING, n INTEGER" and re.match(r"^[\d.]+ KiB$", cells[3])
        assert re.match(SHOWN_TIME, cells[5]), cells[5]
        # the indexes under their table; the helper tables folded away, counted
        assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "table.tables a")] == [
            "events", "events_by_n2", "events_local"]
        assert [t.text for t in browser.find_elements(By.CSS_SELECTOR, "table.tables .tag")] == [
            "global index", "local index"]
        summary = browser.find_element(By.CSS_SELECTOR, "details.internal summary")
        assert summary.text.startswith("Internal tables (3): ")
        assert not browser.find_element(By.CSS_SELECTOR, "table.internal").is_displayed()
        browser.save_screenshot(os.path.join(images, "console-overview.png"))

        _navigate(browser, link)
        assert browser.find_element(By.TAG_NAME, "h1").text == "Table events"
        assert browser.find_element(By.CSS_SELECTOR, ".policy").text == \
            "ConstantSize: split a region when its table files exceed 24 KiB"
        regions = browser.find_elements(By.CSS_SELECTOR, "table.regions tbody tr")
        assert len(regions) >= 4
        first_cells = regions[0].find_elements(By.TAG_NAME, "td")
        assert first_cells[1].text == "INF_MIN" and regions[-1].find_elements(
            By.TAG_NAME, "td")[2].text == "INF_MAX"
        assert all(re.match(r"^(\d+(\.\d)? (B|KiB)|never)$", r.find_elements(
            By.TAG_NAME, "td")[9].text) for r in regions)                # "Splits at"
        # the key cells stay on one line; the long split key is cut, whole in its title
        cells = _assert_one_line(browser, "regions")
        assert [cut for *_, cut, title in cells if title == 'STRING "%s"' % LONG_KEY] == \
            [True, True]                    # one region's end, the next one's start
        assert browser.execute_script(      # the whole table fits at 1280 px: no scrolling
            "return document.querySelector('table.regions').getBoundingClientRect().right"
        ) <= WIDTH
        heights = {r.size["height"] for r in regions}
        assert max(heights) < 2 * cells[0][1], heights      # so is every row
        sizes = [float(s.get_attribute("style").split("width:")[1].split("%")[0])
                 for s in browser.find_elements(By.CSS_SELECTOR, ".bar.size span")]
        assert len(sizes) == len(regions) and max(sizes) == 100.0
        bars = browser.find_elements(By.CSS_SELECTOR, ".bar.size span")
        assert all(b.size["width"] > 0 for b in bars)
        assert len(browser.find_elements(By.CSS_SELECTOR, ".bar.writes span")) == len(regions)
        blocker = browser.find_element(By.CSS_SELECTOR, ".blocker")
        assert blocker.text == "hot partition key"
        assert '"zhot"' in blocker.find_element(By.XPATH, "../..").text
        splits = browser.find_elements(By.CSS_SELECTOR, "table.splits tbody tr")
        assert splits and '"a' in splits[0].text
        _assert_one_line(browser, "splits")
        for row in splits:                  # times as UTC dates and "ago", not epoch numbers
            time_cell, _parent, daughters, _key, took = [
                td.text for td in row.find_elements(By.TAG_NAME, "td")]
            assert re.match(SHOWN_TIME, time_cell), time_cell
            assert re.match(r"^\d+ \+ \d+$", daughters) and re.match(r"^(\d+ ms|[\d.]+ s)$", took)
        # its secondary indexes, each linked, and the change feed's lag, above the regions
        indexes = [[td.text for td in r.find_elements(By.TAG_NAME, "td")]
                   for r in browser.find_elements(By.CSS_SELECTOR, "table.indexes tbody tr")]
        assert [r[:5] for r in indexes] == [
            ["events_by_n2", "global", "n2 + pk, n", "v", "ISP_INCR: in step"],
            ["events_local", "local", "pk, n2 + n", "\u2013", "ISP_INCR: in step"]]
        assert int(indexes[0][5].replace(",", "")) >= 843 and indexes[0][8] != "1"  # split
        _assert_one_line(browser, "indexes")
        assert browser.execute_script(
            "return document.querySelector('table.indexes').getBoundingClientRect().right"
        ) <= WIDTH
        assert re.match(r"^Change feed events\.feed, [\d.]+ (B|KiB) in \d+ regions?: nothing "
                        r"pending: the global indexes hold every write\.$",
                        browser.find_element(By.ID, "feed").text)
        browser.save_screenshot(os.path.join(images, "console-table.png"))

        # an index's own page says whose it is; its rows browse like any table's
        _navigate(browser, browser.find_element(By.CSS_SELECTOR, "table.indexes a"))
        assert browser.find_element(By.TAG_NAME, "h1").text == "Index events_by_n2"
        facts = browser.find_element(By.CSS_SELECTOR, "dl.facts").text
        assert "Index of\nevents: a global index, kept in step from the change feed of events" \
            in facts
        assert len(browser.find_elements(By.CSS_SELECTOR, "table.regions tbody tr")) >= 2
        _assert_one_line(browser, "regions")
        browser.save_screenshot(os.path.join(images, "console-index.png"))
        _navigate(browser, browser.find_element(By.ID, "browse"))
        assert [th.text for th in browser.find_elements(By.CSS_SELECTOR, "table.rows th")] == [
            "n2", "pk", "n", "v", "Last write (UTC)"]
        assert browser.find_element(By.CSS_SELECTOR, "table.rows tbody td").text == "0"
        browser.get(base + "/tables/events")

        _navigate(browser, browser.find_element(By.ID, "browse"))
        headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "table.rows th")]
        assert headers == ["pk", "n", "n2", "v", "Last write (UTC)"]
        rows = browser.find_elements(By.CSS_SELECTOR, "table.rows tbody tr")
        assert len(rows) == 50                                  # the default limit
        on_screen = browser.execute_script(
            "return Array.from(document.querySelectorAll('table.rows tbody tr'))"
            ".filter(r => r.getBoundingClientRect().bottom <= innerHeight).length")
        assert on_screen >= 25, on_screen                       # a dense grid: one line a row
        cells = _assert_one_line(browser, "rows")
        assert any(cut for *_, cut, _title in cells)            # the long values are cut
        for row in rows[:5]:
            written = row.find_elements(By.TAG_NAME, "td")[-1].text
            assert re.match(SHOWN_TIME, written), written
        browser.save_screenshot(os.path.join(images, "console-rows.png"))

        limit = browser.find_element(By.NAME, "limit")
        limit.clear()
        limit.send_keys("4")
        start_pk = browser.find_element(By.NAME, "start.pk")
        assert start_pk.get_attribute("value") == "INF_MIN"     # the bound in effect
        start_pk.clear()
        start_pk.send_keys("a010")
        _navigate(browser, browser.find_element(By.ID, "range-go"))

        def first_column():
            return [r.find_element(By.TAG_NAME, "td").text
                    for r in browser.find_elements(By.CSS_SELECTOR, "table.rows tbody tr")]
        assert first_column() == ['"a010"', '"a011"', '"a012"', '"a013"']
        _navigate(browser, browser.find_element(By.ID, "next-page"))
        assert first_column() == ['"a014"', '"a015"', '"a016"', '"a017"']
        # GetRow by primary key
        browser.get(base + "/tables/events/rows")
        browser.find_element(By.NAME, "pk.pk").send_keys("zhot")
        browser.find_element(By.NAME, "pk.n").send_keys("7")
        _navigate(browser, browser.find_element(By.ID, "getrow-go"))
        (row,) = browser.find_elements(By.CSS_SELECTOR, "table.rows tbody tr")
        headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "table.rows th")]
        shown = dict(zip(headers, (td.text for td in row.find_elements(By.TAG_NAME, "td"))))
        assert (shown["pk"], shown["n"], shown["n2"]) == ('"zhot"', "7", "7")
        # rows full of markup stay inert: shown as text, no element, no alert
        browser.get(base + "/tables/events/rows?limit=3&start.pk=" + "%3C")
        text = browser.find_element(By.CSS_SELECTOR, "table.rows").get_attribute("textContent")
        assert "<script>" in text and "<img src=x onerror=alert(1)>" in text
        assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script")
        assert _no_alert(browser)
    finally:
        srv.stop()


def test_search_indexes_and_the_stream_in_headless_chromium(tmp_path, browser):
    """A table with a search index (many fields: cut on one line) and a
    stream: the overview's line under the table links to the index's row on
    the table's page; the sections stay on one line a row and fit."""
    from selenium.webdriver.common.by import By
    from consoleserver import create_docs
    srv = start(tmp_path)
    try:
        client = srv.service.client
        keywords = ["keyword_field_%02d" % i for i in range(12)]
        create_docs(client, keywords=keywords)
        c = sdk(srv)
        import tablestore as ts
        for i in range(30):
            c.put_row("docs", ts.Row([("pk", "d%02d" % i)], [("title", "hello %d" % i), ("n", i)]))
        assert client.wait_for_search_index("docs", "docs_idx")
        base = "http://127.0.0.1:%d" % srv.server_address[1]
        browser.get(base + "/")
        assert [t.text for t in browser.find_elements(By.CSS_SELECTOR, "table.tables .tag")] == [
            "stream", "search index"]
        cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR,
                                                         "table.tables tbody tr")[1]
                 .find_elements(By.TAG_NAME, "td")]
        assert cells[0] == "\u21b3 docs_idx search index" and cells[1].startswith("title TEXT")
        heights = [r.size["height"] for r in browser.find_elements(
            By.CSS_SELECTOR, "table.tables tbody tr")]
        assert heights[1] <= heights[0] + 1, heights     # the fields cut on one line
        _navigate(browser, browser.find_element(By.CSS_SELECTOR, "a.search-link"))
        assert browser.current_url.endswith("/tables/docs#search-docs_idx")
        assert browser.find_element(By.ID, "search-docs_idx").text == "docs_idx"
        rows = [[td.text for td in r.find_elements(By.TAG_NAME, "td")]
                for r in browser.find_elements(By.CSS_SELECTOR, "table.searches tbody tr")]
        assert [r[:2] + r[3:6] for r in rows] == [
            ["docs_idx", "INCR: in step", "forever", "none", "30"]]
        assert re.match(r"^[\d.]+ (B|KiB)$", rows[0][6])
        fields = browser.find_element(By.CSS_SELECTOR, "table.searches td.key .k span")
        assert fields.get_attribute("title").endswith("keyword_field_11 KEYWORD")
        assert browser.execute_script(      # cut with an ellipsis, whole in its title
            "const k = document.querySelector('table.searches td.key .k');"
            "return k.scrollWidth > k.clientWidth")
        _assert_one_line(browser, "searches")
        assert re.match(r"^Change feed docs\.feed, [\d.]+ (B|KiB) in 1 region: nothing pending: "
                        r"the search indexes hold every write\.$",
                        browser.find_element(By.ID, "feed").text)
        stream = [td.text for td in browser.find_elements(By.CSS_SELECTOR,
                                                          "table.stream tbody td")]
        assert stream[0].startswith("docs_") and stream[1:5] == ["24 h", "2", "2", "docs.stream"]
        for table in ("searches", "stream"):
            assert browser.execute_script(
                "return document.querySelector('table.%s').getBoundingClientRect().right"
                % table) <= WIDTH
        browser.save_screenshot(os.path.join(os.environ.get(SCREENSHOTS_ENV) or str(tmp_path),
                                             "console-search.png"))
    finally:
        srv.stop()
