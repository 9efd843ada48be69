"""The web console, /metrics, and the metrics dicts behind them
(regions/metrics.py, RegionServer.metrics(), OTSClient.metrics(),
regions/otsserver/console.py and metrics.py)."""
import http.client
import json
import logging
import re
import sys
import time

import lsm
import pytest
import tablestore as ts
from prometheus_client.parser import text_string_to_metric_families

import regions
import regions.tablestore as emb
from consoleserver import (HOSTILE, KEY_ID, SECRET, create_docs, create_events, get,
                           post_signed, put_rows, rows_url, sdk, start, wait_for)
from regions import procedure
from regions.metrics import LATENCY_BUCKETS, ApiMetrics, RateTracker
from regions.otsserver.console import (Console, ago_text, duration_text, span_text, static_file,
                                       utc_iso, utc_text)
from regions.otsserver.hosts import is_loopback
from regions.reports import describe_policy, human_bytes


@pytest.fixture
def server(tmp_path):
    srv = start(tmp_path)
    yield srv
    srv.stop()


def jget(srv, path, **kw):
    status, headers, body = get(srv, path, **kw)
    assert status == 200, body
    assert headers["content-type"].startswith("application/json")
    return json.loads(body)


def samples(text):
    """{(name, sorted labels): value} of a Prometheus text exposition."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def scrape(srv):
    status, headers, body = get(srv, "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain")
    return samples(body.decode())


def scrape_client(client):
    from regions.otsserver.metrics import exposition
    return samples(exposition(client).decode())


# -- the numbers, embedded -----------------------------------------------------
def test_client_metrics_count_requests_errors_and_latency(tmp_path):
    with emb.OTSClient(str(tmp_path / "d")) as c:
        c.create_table(emb.TableMeta("t", [("pk", "STRING")]), emb.TableOptions(),
                       emb.ReservedThroughput(emb.CapacityUnit(0, 0)))
        for i in range(7):
            c.put_row("t", emb.Row([("pk", "k%d" % i)], [("v", i)]))
        c.get_row("t", [("pk", "k1")])
        with pytest.raises(emb.OTSServiceError):
            c.get_row("missing", [("pk", "k1")])
        with pytest.raises(emb.OTSClientError):
            c.get_row("t", "not a key")
        m = c.metrics()
    api = m["api"]
    assert api["requests"] == {"CreateTable": 1, "PutRow": 7, "GetRow": 3}
    assert api["errors"] == {"GetRow": {"OTSObjectNotExist": 1, "OTSParameterInvalid": 1}}
    h = api["latency"]["PutRow"]
    assert h["count"] == 7 and sum(h["counts"]) == 7 and h["sum"] > 0
    assert len(h["counts"]) == len(h["buckets"]) + 1
    assert api["requests_per_second"] > 0 and api["errors_per_second"] > 0
    (region,) = m["server"]["tables"]["t"]
    assert region["writes"] == 7 and region["wal_appends"] >= 7
    assert region["reads"] >= 1 and region["key_count"] >= 7
    assert m["tables"]["t"]["primary_key"] == [["pk", "STRING"]]
    assert m["tables"]["t"]["max_versions"] == 1


def test_server_metrics_flushes_split_history_and_rollback(tmp_path):
    opts = regions.ServerOptions(memtable_bytes=4096, background_workers=0)
    with regions.RegionServer.open(str(tmp_path / "s"), opts) as s:
        s.create_table("t")
        for i in range(300):
            s.put("t", b"k%04d" % i, b"v" * 50)
        s.flush_all()
        m = s.metrics()
        (r,) = m["tables"]["t"]
        assert r["flushes"] >= 1 and r["bytes_flushed"] > 0 and r["size_bytes"] > 0
        assert r["wal_appends"] == 300 and r["writes"] == 300
        assert sum(r["files_per_level"]) >= 1
        assert m["splits"]["started"] == 0

        def fail(name):
            if name == "split.daughter_a_created":
                raise RuntimeError("injected")
        with procedure.kill_hook(fail):
            with pytest.raises(RuntimeError):
                s.split_region("t", r["region_id"], b"k0100")
        daughters = s.split_region("t", r["region_id"], b"k0150")
        m = s.metrics()
        sp = m["splits"]
        assert (sp["started"], sp["finished"], sp["rolled_back"]) == (2, 1, 1)
        assert sp["duration"]["count"] == 2
        (last,) = sp["recent"]
        assert last["parent"] == r["region_id"] and last["split_key"] == b"k0150"
        assert last["daughters"] == [d.region_id for d in daughters]
        assert last["duration_seconds"] > 0 and last["table"] == "t"
        assert [x["region_id"] for x in m["tables"]["t"]] == last["daughters"]


def test_split_history_survives_a_restart_and_shows_in_human_times(tmp_path):
    srv = start(tmp_path)
    try:
        create_events(srv)
        put_rows(sdk(srv), "events", [("a%03d" % i, i) for i in range(300)])
        before = wait_for(lambda: jget(srv, "/tables/events?format=json")["recent_splits"],
                          what="a split")
        rows = jget(srv, rows_url("events", format="json", limit=1))["rows"]
    finally:
        srv.stop()
    srv = start(tmp_path)       # the same data directory: a new server process's view
    try:
        d = jget(srv, "/tables/events?format=json")
        o = jget(srv, "/?format=json")
        html = get(srv, "/tables/events")[2].decode()
        overview = get(srv, "/")[2].decode()
        rows_html = get(srv, rows_url("events", limit=1))[2].decode()
    finally:
        srv.stop()
    after = d["recent_splits"][-len(before):]
    assert after == before
    # the counters start again with the server; the history is meta's
    assert o["splits"]["finished"] <= len(d["recent_splits"]) - len(before)
    s = after[0]
    assert s["split_key"]["type"] == "STRING" and len(s["daughters"]) == 2
    assert abs(s["time"] - time.time()) < 120 and s["duration_seconds"] > 0     # machine values
    assert s["time_utc"] == utc_iso(s["time"]) and s["time_utc"].endswith("+00:00")
    assert o["tables"][0]["last_split"] == d["recent_splits"][0]["time"]
    # the HTML says times as UTC dates and "ago", never as epoch numbers
    for text in (html, overview, rows_html):
        assert not re.search(r"\b1\d{9,12}\b", re.sub(r"<[^>]*>", " ", text)), text
    shown = re.findall(r'<time datetime="([^"]+)">(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)</time> '
                       r'<span class="ago">(just now|\d+ (?:s|min) ago)</span>', html)
    assert len(shown) == len(d["recent_splits"]) and shown[0][1] == utc_text(
        d["recent_splits"][0]["time"])
    assert "Last split (UTC)" in overview and shown[0][1] in overview
    written = rows[0]["attributes"][0][2]               # milliseconds in the JSON
    assert utc_text(written / 1000) in rows_html and "Last write (UTC)" in rows_html


def test_sizes_times_and_policies_in_words():
    assert [human_bytes(n) for n in (0, 812, 1024, 2969, 24 << 10, (1 << 20) - 1, 160 << 20,
                                     10 << 30, 3 << 40)] == [
        "0 B", "812 B", "1 KiB", "2.9 KiB", "24 KiB", "1 MiB", "160 MiB", "10 GiB", "3 TiB"]
    assert [span_text(s) for s in (0, 12.7, 60, 192, 3601, 7500, 90061)] == [
        "0 s", "12 s", "1 min", "3 min 12 s", "1 h", "2 h 5 min", "1 d 1 h"]
    assert [ago_text(s) for s in (-3, 0.5, 12, 192, 7500, 400000)] == [
        "just now", "just now", "12 s ago", "3 min ago", "2 h ago", "4 d ago"]
    assert [duration_text(s) for s in (0.0001, 0.052, 1.25, 12.34, 192)] == [
        "<1 ms", "52 ms", "1.25 s", "12.3 s", "3 min 12 s"]
    assert utc_text(1717221819.5) == "2024-06-01 06:03:39"
    mib = 1 << 20
    assert describe_policy(regions.ConstantSizeSplitPolicy(512 * mib, jitter=0.25)) == \
        "ConstantSize: split a region when its table files exceed 512 MiB ± 12.5 %"
    assert describe_policy(regions.IncreasingToUpperBoundSplitPolicy(10 << 30, 256 * mib, 0)) == (
        "IncreasingToUpperBound: split a region when its table files exceed "
        "min(256 MiB × regions³, 10 GiB), regions = its table's regions on this server")
    assert describe_policy(regions.SteppingSplitPolicy(512 * mib, 16 * mib, 0.25)) == (
        "Stepping: split a region when its table files exceed 16 MiB while its table has one "
        "region, then 512 MiB ± 12.5 %")
    assert describe_policy(regions.DisabledSplitPolicy()).startswith("Disabled: regions never")

    class Custom(regions.ConstantSizeSplitPolicy):
        pass
    assert describe_policy(Custom(4096)) == repr(Custom(4096))     # no words for what we don't know


def test_rates_need_two_samples_a_second_apart_and_cover_the_window():
    now = [1000.0]
    rt = RateTracker(window=60, clock=lambda: now[0])
    assert rt.observe(7, (0, 0)) is None
    now[0] += 0.5
    assert rt.observe(7, (5, 5)) is None
    now[0] += 1.5
    assert rt.observe(7, (10, 4)) == (5.0, 2.0)
    for _ in range(100):                # old samples leave the window
        now[0] += 1
        rt.observe(7, (10, 4))
    assert rt.observe(7, (10, 4)) == (0.0, 0.0)
    rt.forget(set())
    assert rt.observe(7, (10, 4)) is None


def test_api_rates_cover_the_last_minute():
    now = [5000.0]
    am = ApiMetrics(clock=lambda: now[0])
    now[0] += 100
    for _ in range(120):
        am.record("GetRow", 0.001)
    am.record("GetRow", 0.001, "OTSObjectNotExist")
    assert am.rates() == (121 / 60, 1 / 60)
    now[0] += 61
    assert am.rates() == (0.0, 0.0)
    snap = am.snapshot()
    assert snap["requests"] == {"GetRow": 121} and snap["latency"]["GetRow"]["counts"][3] == 121
    # a latency on a bound counts in that bucket (Prometheus' "le"); past the last, +Inf
    for seconds in (0.0, 0.0001, 0.00010001, 10.0, 10.5):
        am.record("PutRow", seconds)
    h = am.snapshot()["latency"]["PutRow"]
    assert h["counts"] == [2, 1] + [0] * 13 + [1, 1] and h["count"] == 5
    assert h["sum"] == pytest.approx(20.50020001) and h["buckets"] == list(LATENCY_BUCKETS)


def test_lsm_counts_wal_appends_and_fsyncs(tmp_path):
    with lsm.DB.open(str(tmp_path / "db")) as db:
        db.put(b"a", b"1")
        db.write(lsm.WriteBatch().put(b"b", b"2").put(b"c", b"3"))
        db.put(b"d", b"4", sync=True)
        st = db.stats()
    assert st["wal_appends"] == 3 and st["wal_fsyncs"] == 1


# -- pages ---------------------------------------------------------------------
def test_overview_and_table_json(server):
    create_events(server)
    c = sdk(server)
    put_rows(c, "events", [("a%03d" % i, i) for i in range(50)] + [("z", i) for i in range(20)])
    o = jget(server, "/?format=json")
    assert o["instance"] == "console" and o["durability"] == "async"
    assert o["data_directory"].endswith("data") and o["uptime_seconds"] >= 0
    (t,) = o["tables"]
    assert t["name"] == "events" and t["regions"] == 2
    assert t["primary_key"] == [["pk", "STRING"], ["n", "INTEGER"]]
    assert t["memtable_bytes"] + t["stored_bytes"] > 0
    assert o["requests_total"] >= 1 and o["requests_per_second"] > 0
    d = jget(server, "/tables/events?format=json")
    assert [(r["start"], r["end"]) for r in d["regions"]] == [
        ({"type": "INF_MIN", "value": None}, {"type": "STRING", "value": "m"}),
        ({"type": "STRING", "value": "m"}, {"type": "INF_MAX", "value": None})]
    assert [r["writes"] for r in d["regions"]] == [50, 20]
    assert d["time_to_live"] == -1 and d["max_versions"] == 1
    assert d["split_policy"] == {
        "name": "constant", "class": "ConstantSizeSplitPolicy",
        "parameters": {"max_bytes": 24 << 10, "jitter": 0.0},
        "description": "ConstantSize: split a region when its table files exceed 24 KiB"}
    assert all(r["split_threshold"] == 24 << 10 for r in d["regions"])
    assert d["recent_splits"] == [] and o["tables"][0]["last_split"] is None
    html = get(server, "/tables/events")[2].decode()
    assert html.count('class="bar size"') == 2 and html.count('class="bar writes"') == 2
    assert "&quot;m&quot;" in html and "INF_MIN" in html
    assert "split a region when its table files exceed 24 KiB</span>" in html
    assert "<td class=\"num\">24 KiB</td>" in html
    assert "24576" not in re.sub(r"<[^>]*>", " ", html)     # bytes only in the policy's title
    html = get(server, "/")[2].decode()
    assert re.search(r"<dd>\d+ s \(since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)</dd>", html)
    assert re.search(r"<dd>[\d.]+ (?:B|KiB) used of 160 MiB, \d+ hits, \d+ misses</dd>", html)


def test_row_browser_pages_through_every_row_in_both_directions(server):
    create_events(server)
    c = sdk(server)
    keys = [("a%03d" % i, i) for i in range(23)] + [("q", i) for i in range(9)]
    put_rows(c, "events", keys)
    for direction, expected in (("FORWARD", sorted(keys)), ("BACKWARD", sorted(keys)[::-1])):
        seen, query, pages = [], "limit=5&direction=" + direction, 0
        while query:
            d = jget(server, "/tables/events/rows?format=json&" + query)
            seen += [tuple(v["value"] for _n, v in row["primary_key"]) for row in d["rows"]]
            query = d["next_query"]
            pages += 1
        assert seen == expected and pages == 7
    d = jget(server, rows_url("events", format="json", **{"start.pk": "a010", "end.pk": "a012",
                                                          "columns": "n2"}))
    # an empty end column is INF_MAX: ("a012", 12) is inside; INF_MIN typed leaves it out
    assert [r["primary_key"][0][1]["value"] for r in d["rows"]] == ["a010", "a011", "a012"]
    d = jget(server, rows_url("events", format="json", **{"start.pk": "a010", "end.pk": "a012",
                                                          "end.n": "INF_MIN", "columns": "n2"}))
    assert [r["primary_key"][0][1]["value"] for r in d["rows"]] == ["a010", "a011"]
    assert d["end"] == [["pk", {"type": "STRING", "value": "a012"}],
                        ["n", {"type": "INF_MIN", "value": None}]]
    assert [[a[0] for a in r["attributes"]] for r in d["rows"]] == [["n2"], ["n2"]]
    d = jget(server, rows_url("events", format="json", get=1, **{"pk.pk": "q", "pk.n": "3"}))
    assert d["mode"] == "GetRow" and d["rows"][0]["attributes"][0][1] == \
        {"type": "INTEGER", "value": 3}
    d = jget(server, rows_url("events", format="json", get=1, **{"pk.pk": "q", "pk.n": "99"}))
    assert d["rows"] == []


def test_long_values_are_cut_with_their_length(server):
    create_events(server)
    put_rows(sdk(server), "events", [("a", 1)], value_bytes=5000)
    d = jget(server, rows_url("events", format="json"))
    v = dict((a[0], a[1]) for a in d["rows"][0]["attributes"])["v"]
    assert v["cut"] and v["length"] == 5000 and len(v["value"]) == 200


def test_bad_input_gets_a_clear_error(server):
    create_events(server)
    status, _, body = get(server, rows_url("events", **{"start.n": "<b>x"}))
    assert status == 400 and b"is not a valid INTEGER value" in body and b"<b>x" not in body
    status, _, body = get(server, rows_url("events", format="json", limit="0"))
    assert status == 400 and "limit" in json.loads(body)["error"]
    status, _, body = get(server, rows_url("events", format="json", direction="UP"))
    assert status == 400
    assert get(server, "/tables/nope")[0] == 404
    assert get(server, "/tables/nope/rows")[0] == 404
    assert get(server, "/nothing/here")[0] == 404
    assert get(server, "/static/../console.py")[0] == 404
    # the wire API still refuses other methods and still works on POST
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=10)
    conn.request("DELETE", "/ListTable")
    assert conn.getresponse().status == 405
    conn.close()
    assert list(sdk(server).list_table()) == ["events"]


def test_user_data_is_escaped_everywhere(server):
    create_events(server, split_at=(HOSTILE,))
    put_rows(sdk(server), "events", [(HOSTILE + str(i), i) for i in range(5)], hostile=True)
    for path in ("/", "/tables/events", "/tables/events/rows?limit=2",
                 rows_url("events", get=1, **{"pk.pk": HOSTILE + "1", "pk.n": "1"})):
        status, headers, body = get(server, path)
        assert status == 200 and headers["content-type"].startswith("text/html")
        assert headers["x-content-type-options"] == "nosniff"
        text = body.decode()
        assert "<script" not in text.lower() and "<img" not in text.lower(), path
        if path != "/":     # names cannot hold markup; keys and values are shown escaped
            assert "&lt;script&gt;" in text, path


def test_static_files_ship_in_the_package(server):
    css = static_file("console.css")
    assert b".bar" in css
    status, headers, body = get(server, "/static/console.css")
    assert status == 200 and headers["content-type"].startswith("text/css") and body == css


# -- /metrics --------------------------------------------------------------------
def test_metrics_endpoint_parses_with_prometheus_client(server):
    create_events(server)
    c = sdk(server)
    put_rows(c, "events", [("a%03d" % i, i) for i in range(30)])
    c.get_row("events", [("pk", "a001"), ("n", 1)], max_version=1)
    with pytest.raises(ts.OTSServiceError):
        c.get_row("nope", [("pk", "a"), ("n", 1)], max_version=1)
    m = scrape(server)
    assert m[("regions_api_requests_total", (("api", "BatchWriteRow"),))] == 1
    assert m[("regions_api_requests_total", (("api", "GetRow"),))] == 2
    assert m[("regions_api_errors_total", (("api", "GetRow"), ("code", "OTSObjectNotExist")))] == 1
    assert m[("regions_api_request_duration_seconds_count", (("api", "GetRow"),))] == 2
    assert m[("regions_api_request_duration_seconds_bucket",
              (("api", "GetRow"), ("le", "+Inf")))] == 2
    first = (("region", "1"), ("table", "events"))
    assert m[("regions_region_writes_total", first)] == 30
    assert m[("regions_region_reads_total", first)] >= 1
    assert m[("regions_region_wal_appends_total", first)] >= 1
    assert m[("regions_region_memtable_bytes", first)] > 0
    assert ("regions_region_store_files", (("level", "0"),) + first) in m
    assert m[("regions_table_regions", (("table", "events"),))] == 2
    for name in ("regions_splits_started_total", "regions_splits_finished_total",
                 "regions_splits_rolled_back_total", "regions_block_cache_hits_total",
                 "regions_block_cache_misses_total", "regions_split_duration_seconds_count",
                 "regions_uptime_seconds"):
        assert (name, ()) in m, name


def test_without_prometheus_client_metrics_answers_503_with_the_line_naming_the_extra(
        server, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    status, headers, body = get(server, "/metrics")
    assert (status, headers["content-type"], body) == (
        503, "text/plain; charset=utf-8",
        b"/metrics needs prometheus_client: pip install -e '.[server]'\n")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert jget(server, "/?format=json")["instance"]    # the console still serves
    monkeypatch.undo()
    assert scrape(server)                               # and /metrics once it is there


def test_requests_refused_before_the_data_api_are_counted_once(server):
    """Authentication, protobuf and unknown-API refusals count under their API
    (or "Unknown") with their error code; a request that reaches the data API
    is counted once, not once by the endpoint and again by the client."""
    create_events(server)
    good = sdk(server)
    good.get_row("events", [("pk", "a"), ("n", 1)], max_version=1)
    with pytest.raises(ts.OTSServiceError) as e:
        sdk(server, secret="not-the-secret").get_row("events", [("pk", "a"), ("n", 1)],
                                                    max_version=1)
    assert e.value.code == "OTSAuthFailed"
    assert post_signed(server, "GetRow", b"\xff\xfe not protobuf")[0] == 400
    assert post_signed(server, "NoSuchApi", b"")[0] == 400
    good.abort_transaction(good.start_local_transaction("events", [("pk", "a")]))
    m = scrape(server)
    assert m[("regions_api_requests_total", (("api", "GetRow"),))] == 3
    assert m[("regions_api_errors_total", (("api", "GetRow"), ("code", "OTSAuthFailed")))] == 1
    assert m[("regions_api_errors_total", (("api", "GetRow"), ("code", "OTSParameterInvalid")))] == 1
    assert m[("regions_api_errors_total", (("api", "Unknown"), ("code", "OTSParameterInvalid")))] == 1
    assert m[("regions_api_requests_total", (("api", "StartLocalTransaction"),))] == 1
    assert m[("regions_api_requests_total", (("api", "AbortTransaction"),))] == 1
    assert ("regions_api_requests_total", (("api", "NoSuchApi"),)) not in m


# -- access ------------------------------------------------------------------------
def test_loopback_is_open_and_other_addresses_need_the_access_key(tmp_path):
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3") and not is_loopback("")
    srv = start(tmp_path, host="0.0.0.0")
    try:
        for path in ("/", "/metrics", "/tables/x", "/static/console.css"):
            status, headers, _ = get(srv, path)
            assert status == 401 and headers["www-authenticate"].startswith("Basic"), path
        assert get(srv, "/", auth=(KEY_ID, "wrong"))[0] == 401
        assert get(srv, "/", auth=("other", SECRET))[0] == 401
        assert get(srv, "/", auth=(KEY_ID, SECRET))[0] == 200
        assert get(srv, "/metrics", auth=(KEY_ID, SECRET))[0] == 200
        assert list(sdk(srv).list_table()) == []      # the wire API is unaffected
    finally:
        srv.stop()


def test_static_paths_that_are_not_a_shipped_name_are_404_never_500(server, caplog):
    for name in ("console.css%00", "%00", "a" * 5000 + ".css", "..%2fconsole.py", "%2e%2e",
                 "console.css/", "", "x%2fy.css", "%5c..%5cconsole.py", "console.py"):
        assert get(server, "/static/" + name)[0] == 404, name
    for path in ("/tables/%00", "/tables/%00/rows", "/tables/" + "a" * 5000 + "/rows", "/%ff%00"):
        assert get(server, path)[0] == 404, path
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_on_loopback_every_page_needs_a_loopback_host_name(server, tmp_path):
    port = server.server_address[1]
    for path in ("/", "/metrics", "/tables/x", "/static/console.css", "/tables/x/rows"):
        status, headers, body = get(server, path, host_header="rebound.example:%d" % port)
        assert (status, headers["content-type"]) == (403, "text/plain; charset=utf-8"), path
        assert body.startswith(b"Host header 'rebound.example:%d' is not a name of this server"
                               % port), path
    for name in ("localhost", "localhost:%d" % port, "127.0.0.1:%d" % port, "[::1]:%d" % port, "::1"):
        assert get(server, "/static/console.css", host_header=name)[0] == 200, name
    srv = start(tmp_path / "any", host="0.0.0.0")       # elsewhere: the access key, any name
    try:
        assert get(srv, "/", auth=(KEY_ID, SECRET), host_header="console.example")[0] == 200
    finally:
        srv.stop()


def test_console_direct_refuses_malformed_credentials():
    class NoClient:
        def metrics(self):
            raise AssertionError("not reached")
    c = Console(NoClient(), "i", {"id": "s"}, open_access=False, sample_seconds=0)
    for header in ("", "Basic", "Basic !!!", "Bearer abc", "Basic aWQ="):   # "id" without ':'
        assert c.handle("/", {"authorization": header}).status == 401


def test_number_pages_render_at_most_once_a_second_and_rows_never_cached(tmp_path):
    now = [100.0]
    with emb.OTSClient(str(tmp_path / "s")) as client:
        client.create_table(emb.TableMeta("t", [("pk", "STRING")]), emb.TableOptions())
        c = Console(client, "i", {}, open_access=True, sample_seconds=0, clock=lambda: now[0])

        def body(path):
            reply = c.handle(path, {})
            assert reply.status == 200, reply
            return reply.body

        first = {p: body(p) for p in ("/metrics", "/?format=json", "/tables/t?format=json")}
        rows = body("/tables/t/rows?format=json")
        client.put_row("t", emb.Row([("pk", "a")], [("v", 1)]))
        now[0] += 0.5           # within the second: the same renderings
        assert {p: body(p) for p in first} == first
        assert body("/tables/t/rows?format=json") != rows          # the row browser reads now
        now[0] += 0.6           # past it: rendered again, with the write counted
        assert body("/metrics") != first["/metrics"]
        before = json.loads(first["/?format=json"])["requests_total"]
        assert json.loads(body("/?format=json"))["requests_total"] > before
        assert c.handle("/tables/nope", {}).status == 404


def test_split_and_hot_partition_key_show_on_the_table_page(server):
    create_events(server)
    c = sdk(server)
    put_rows(c, "events", [("a%03d" % i, i) for i in range(300)])
    put_rows(c, "events", [("zhot", i) for i in range(300)])

    def state():
        d = jget(server, "/tables/events?format=json")
        blocked = [r for r in d["regions"] if r["hot_key"]]
        return d if len(d["regions"]) >= 3 and d["recent_splits"] and blocked else None
    d = wait_for(state, what="a split and a hot partition key")
    s = d["recent_splits"][0]
    assert s["split_key"]["type"] == "STRING" and s["split_key"]["value"].startswith("a")
    assert len(s["daughters"]) == 2 and s["duration_seconds"] > 0
    (hot,) = [r for r in d["regions"] if r["hot_key"]]
    assert hot["hot_key"] == {"type": "STRING", "value": "zhot"}
    assert hot["split_blocker"].startswith("region")
    assert "hot partition key" in hot["split_blocker"]
    starts = [r["start"] for r in d["regions"]]
    assert starts[0]["type"] == "INF_MIN"
    values = [x["value"] for x in starts[1:]]
    assert values == sorted(values)
    html = get(server, "/tables/events")[2].decode()
    assert re.search(r'class="blocker" title="[^"]*">hot partition key</span>', html)
    assert "&quot;zhot&quot;" in html


def test_no_console_answers_get_with_405(tmp_path):
    from regions.otsserver.cli import make_server
    srv = make_server(str(tmp_path / "d"), "127.0.0.1", 0, "i", "k", "s", console=False).start()
    try:
        assert srv.console is None
        assert get(srv, "/")[0] == 405 and get(srv, "/metrics")[0] == 405
    finally:
        srv.stop()


# -- secondary indexes -----------------------------------------------------------
def test_indexes_show_with_their_base_table_and_the_helper_tables_apart(server):
    create_events(server, indexed=True, index_split_at=[150])
    create_events(server, name="plain")
    put_rows(sdk(server), "events", [("a%03d" % i, i) for i in range(40)])
    assert server.service.client.wait_for_indexes("events")
    o = jget(server, "/?format=json")
    assert [(t["name"], t["index_of"], t["index_type"], t["indexes"]) for t in o["tables"]] == [
        ("events", None, None, ["events_by_n2", "events_local"]),
        ("events_by_n2", "events", "global", []), ("events_local", "events", "local", []),
        ("plain", None, None, [])]
    assert [(t["name"], t["kind"], t["of"], t["base"], t["regions"]) for t in o["internal_tables"]
            ] == [("events.feed", "feed", "events", "events", 1),
                  ("events_by_n2.refs", "refs", "events_by_n2", "events", 1),
                  ("events_local.refs", "refs", "events_local", "events", 1)]
    html = get(server, "/")[2].decode()
    assert '<span class="sub" title="index of events">&#8627;</span> <a class="table-link" ' \
           'href="/tables/events_by_n2">events_by_n2</a> <span class="tag">global index</span>' \
           in html
    assert '<details class="internal"><summary>Internal tables (3)' in html
    assert 'change feed of <a class="table-link" href="/tables/events">events</a>' in html
    assert html.index(">events_local</a>") < html.index(">plain</a>")     # grouped, then on

    d = jget(server, "/tables/events?format=json")
    assert d["index_of"] is None and d["index"] is None
    by_n2, local = d["indexes"]
    assert {k: by_n2[k] for k in ("name", "type", "columns", "primary_key", "attributes",
                                  "phase", "regions")} == {
        "name": "events_by_n2", "type": "global", "columns": ["n2"],
        "primary_key": [["n2", "INTEGER"], ["pk", "STRING"], ["n", "INTEGER"]],
        "attributes": ["v"], "phase": "ISP_INCR", "regions": 2}
    # the store's entry estimate: after a split, reference halves are estimated
    assert by_n2["key_count"] > 0
    assert (local["type"], local["columns"], local["attributes"], local["regions"]) == \
        ("local", ["pk", "n2"], [], 1)
    assert local["key_count"] >= 40     # entries: a row rewritten counts again until compacted
    assert by_n2["stored_bytes"] + by_n2["memtable_bytes"] > 40 * 200
    assert (d["feed"]["table"], d["feed"]["backlog"], d["feed"]["oldest_pending"]) == \
        ("events.feed", 0, None)
    html = get(server, "/tables/events")[2].decode()
    assert "<h2>Secondary indexes (2)</h2>" in html
    assert '<a class="table-link" href="/tables/events_local">events_local</a>' in html
    assert 'n2 <span class="auto">+ pk, n</span>' in html and "ISP_INCR: in step" in html
    assert "<b>nothing pending</b>: the global indexes hold every write" in html
    plain = jget(server, "/tables/plain?format=json")
    assert (plain["indexes"], plain["feed"], plain["index"]) == ([], None, None)
    assert "Secondary indexes" not in get(server, "/tables/plain")[2].decode()

    d = jget(server, "/tables/events_by_n2?format=json")
    assert d["index_of"] == "events" and d["indexes"] == [] and d["feed"] is None
    assert d["index"]["refs_table"] == "events_by_n2.refs" and d["index"]["type"] == "global"
    assert [(r["start"], r["end"]) for r in d["regions"]] == [
        ({"type": "INF_MIN", "value": None}, {"type": "INTEGER", "value": 150}),
        ({"type": "INTEGER", "value": 150}, {"type": "INF_MAX", "value": None})]
    html = get(server, "/tables/events_by_n2")[2].decode()
    assert "<h1>Index events_by_n2</h1>" in html
    assert '<dt>Index of</dt><dd><a class="table-link" href="/tables/events">events</a>: a ' \
           'global index, kept in step from the change feed of events' in html
    assert '<a href="/">overview</a> &rsaquo; <a href="/tables/events">events</a> &rsaquo; ' \
           '<a href="/tables/events_by_n2">events_by_n2</a>' in html
    assert "Reserved CU" not in html     # an index has none of its own

    d = jget(server, rows_url("events_by_n2", format="json", limit=3, **{"start.n2": "30"}))
    assert d["index_of"] == "events"
    assert [[v["value"] for _n, v in r["primary_key"]] for r in d["rows"]] == [
        [30, "a030", 30], [31, "a031", 31], [32, "a032", 32]]
    assert [a[0] for a in d["rows"][0]["attributes"]] == ["v"]
    d = jget(server, rows_url("events_local", format="json", get=1,
                              **{"pk.pk": "a007", "pk.n2": "7", "pk.n": "7"}))
    assert d["rows"][0]["primary_key"][1] == ["n2", {"type": "INTEGER", "value": 7}]
    html = get(server, rows_url("events_by_n2", limit=2))[2].decode()
    assert 'An index of <a href="/tables/events">events</a>: written only by its base table' \
        in html and '<label>n2 <input name="start.n2"' in html


def hold_maintainer(client, monkeypatch, backfill):
    """Hold ``client``'s index maintainer, and its back-fills (method
    ``backfill`` of its Indexer), at a gate: (gate, held), ``held`` set once
    the maintainer waits at the gate."""
    import threading
    indexer = client._indexer
    gate, held = threading.Event(), threading.Event()
    drain, fill = indexer._drain, getattr(indexer, backfill)

    def held_drain(*args):
        held.set()
        gate.wait()
        return drain(*args)

    def held_backfill(*args):
        gate.wait()
        return fill(*args)
    monkeypatch.setattr(indexer, "_drain", held_drain)
    monkeypatch.setattr(indexer, backfill, held_backfill)
    return gate, held


def console_pages(client):
    """A function of a console of ``client``, never cached: a path -> its
    page (its JSON decoded with ``format=json``), asserting 200; the
    Console is its ``console``."""
    c = Console(client, "i", {}, open_access=True, sample_seconds=0, render_seconds=0)

    def page(path):
        reply = c.handle(path, {})
        assert reply.status == 200, reply
        return json.loads(reply.body) if "format=json" in path else reply.body.decode()
    page.console = c
    return page


def test_the_feed_backlog_is_the_global_indexes_lag_and_a_back_fill_shows(tmp_path,
                                                                         monkeypatch):
    """The maintainer held: the base table's page, the overview and /metrics
    count the feed's entries pending; released, they drain to none."""
    from consoleserver import create_table
    with emb.OTSClient(str(tmp_path / "s")) as client:
        create_table(client, indexed=True)
        gate, held = hold_maintainer(client, monkeypatch, "_backfill")
        page = console_pages(client)
        try:
            assert held.wait(10)            # the maintainer waits at the gate
            before = time.time()
            for i in range(25):
                client.put_row("events", emb.Row([("pk", "k%02d" % i), ("n", i)],
                                                  [("n2", i), ("v", "x")]))
            feed = page("/tables/events?format=json")["feed"]
            assert feed["backlog"] == 25 and before - 1 < feed["oldest_pending"] <= time.time()
            assert "<b>25 entries pending</b>: the global indexes' lag in rows, the oldest " \
                   "written" in page("/tables/events")
            m = scrape_client(client)
            assert m[("regions_index_feed_backlog", (("table", "events"),))] == 25
            assert m[("regions_index_feed_oldest_pending_seconds", (("table", "events"),))] >= 0
            local = page(rows_url("events_local", format="json", limit=100))["rows"]
            assert len(local) == 25          # a local index is in step before the write returns
            assert page(rows_url("events_by_n2", format="json"))["rows"] == []
            client.create_secondary_index("events", emb.SecondaryIndexMeta(
                "events_by_v", ["v"], []), include_base_data=True)
            d = page("/tables/events?format=json")
            assert [i["phase"] for i in d["indexes"]] == ["ISP_INCR", "ISP_INCR", "ISP_FULL"]
            assert "ISP_FULL: loading the table&#x27;s rows" in page("/tables/events")
            # not yet a table of the data API, already one of the console
            assert [t["name"] for t in page("/?format=json")["tables"]] == [
                "events", "events_by_n2", "events_local", "events_by_v"]
            assert page("/tables/events_by_v?format=json")["primary_key"] == [
                ["v", "STRING"], ["pk", "STRING"], ["n", "INTEGER"]]
            assert "<dt>Sync phase</dt><dd>ISP_FULL: loading" in page("/tables/events_by_v")
            reply = page.console.handle(rows_url("events_by_v"), {})    # the service refuses the read
            assert reply.status == 400 and b"building base state" in reply.body
        finally:
            gate.set()
        assert client.wait_for_indexes("events")
        d = page("/tables/events?format=json")
        assert d["feed"]["backlog"] == 0 and d["feed"]["oldest_pending"] is None
        assert [i["phase"] for i in d["indexes"]] == ["ISP_INCR"] * 3
        assert len(page(rows_url("events_by_n2", format="json", limit=100))["rows"]) == 25
        m = scrape_client(client)
        assert m[("regions_index_feed_backlog", (("table", "events"),))] == 0
        assert m[("regions_index_feed_oldest_pending_seconds", (("table", "events"),))] == 0


def test_metrics_count_index_tables_and_tell_them_apart(server):
    create_events(server, indexed=True, index_split_at=[10, 20])
    create_events(server, name="local_only")
    server.service.client.create_secondary_index("local_only", emb.SecondaryIndexMeta(
        "local_only_idx", ["pk", "n"], [], emb.SecondaryIndexType.LOCAL_INDEX))
    put_rows(sdk(server), "events", [("a%03d" % i, i) for i in range(30)])
    assert server.service.client.wait_for_indexes("events")
    m = scrape(server)
    info = {dict(labels)["table"]: (dict(labels)["kind"], dict(labels)["base"])
            for (name, labels), v in m.items() if name == "regions_table_info" and v == 1}
    assert info == {"events": ("table", ""), "events_by_n2": ("global_index", "events"),
                    "events_local": ("local_index", "events"), "events.feed": ("feed", "events"),
                    "events_by_n2.refs": ("refs", "events"),
                    "events_local.refs": ("refs", "events"), "local_only": ("table", ""),
                    "local_only_idx": ("local_index", "local_only"),
                    "local_only.feed": ("feed", "local_only"),
                    "local_only_idx.refs": ("refs", "local_only")}
    # every table of the region server has its series, the index tables too
    assert m[("regions_table_regions", (("table", "events_by_n2"),))] == 3   # pre-split
    writes = sum(v for (name, labels), v in m.items() if name == "regions_region_writes_total"
                 and dict(labels)["table"] == "events_by_n2")
    assert writes == 30
    # a backlog only where a global index can lag
    assert m[("regions_index_feed_backlog", (("table", "events"),))] == 0
    assert not [k for k in m if k[0] == "regions_index_feed_backlog"
                and dict(k[1])["table"] == "local_only"]


# -- search indexes and streams -------------------------------------------------------
def put_docs(client, name, n, start=0, size=10):
    for i in range(start, start + n):
        client.put_row(name, emb.Row([("pk", "d%04d" % i)],
                                     [("title", "hello %d %s" % (i, "x" * size)), ("n", i)]))


def test_search_indexes_and_the_stream_show_with_their_table(server):
    client = server.service.client
    create_docs(client)
    create_docs(client, "plain", stream=False, search=False)
    c = sdk(server)
    for i in range(20):         # through the wire: the writes and the search are metered
        c.put_row("docs", ts.Row([("pk", "a%02d" % i)], [("title", "hello %d" % i), ("n", i)]))
    assert client.wait_for_search_index("docs", "docs_idx")
    found = c.search("docs", "docs_idx", ts.SearchQuery(ts.MatchQuery("title", "hello"),
                                                         limit=5, get_total_count=True),
                     ts.ColumnsToGet(return_type=ts.ColumnReturnType.NONE))
    assert found.total_count == 20

    o = jget(server, "/?format=json")
    docs, plain = o["tables"]
    assert (docs["name"], docs["indexes"], plain["search_indexes"], plain["stream"]) == \
        ("docs", [], [], None)
    (s,) = docs["search_indexes"]
    assert {k: v for k, v in s.items() if k != "storage_bytes"} == {
        "name": "docs_idx", "phase": "INCR", "time_to_live": -1,
        "fields": [["title", "TEXT"], ["n", "LONG"]], "documents": 20}
    assert s["storage_bytes"] > 0
    stream_id = docs["stream"]["stream_id"]
    assert docs["stream"] == {"stream_id": stream_id, "expiration_hours": 24, "shards": 2,
                              "open_shards": 2}                      # a shard per region
    assert [(t["name"], t["kind"], t["of"], t["base"]) for t in o["internal_tables"]] == [
        ("docs.feed", "feed", "docs", "docs"), ("docs.search.docs_idx", "search", "docs", "docs"),
        ("docs.stream", "stream", "docs", "docs")]
    html = get(server, "/")[2].decode()
    assert '<a class="table-link" href="/tables/docs">docs</a> <span class="tag stream" ' \
           'title="stream %s: 2 shards (2 open), records kept 24 h">stream</span>' % stream_id \
        in html
    assert '<span class="sub" title="search index of docs">&#8627;</span> <a ' \
           'class="search-link" href="/tables/docs#search-docs_idx">docs_idx</a> <span ' \
           'class="tag">search index</span></td><td><div class="k"><span title="title TEXT, ' \
           'n LONG">title TEXT, n LONG</span></div></td>' in html
    assert html.index(">docs_idx</a>") < html.index(">plain</a>")      # under its table
    assert "record of search index docs_idx of " in html and "stream log of " in html
    assert "Internal tables (3)" in html

    d = jget(server, "/tables/docs?format=json")
    (s,) = d["search_indexes"]
    assert (s["name"], s["phase"], s["documents"], s["backlog"], s["lag_seconds"]) == \
        ("docs_idx", "INCR", 20, 0, 0.0)
    assert (d["feed"]["table"], d["feed"]["backlog"]) == ("docs.feed", 0)
    assert {k: d["stream"][k] for k in ("stream_id", "shards", "open_shards", "table",
                                        "regions")} == {
        "stream_id": stream_id, "shards": 2, "open_shards": 2, "table": "docs.stream",
        "regions": 1}
    assert d["stream"]["stored_bytes"] + d["stream"]["memtable_bytes"] > 0
    html = get(server, "/tables/docs")[2].decode()
    assert "<h2>Search indexes (1)</h2>" in html and "Secondary indexes" not in html
    assert '<td><span class="mono" id="search-docs_idx">docs_idx</span></td><td>INCR: in step' \
           '</td>' in html
    assert "<td>forever</td><td>none</td><td class=\"num\">20</td>" in html
    assert "<b>nothing pending</b>: the search indexes hold every write" in html
    assert '<h2 id="stream">Stream</h2>' in html
    assert '<td><span class="mono">%s</span></td><td class="num">24 h</td><td class="num">2' \
           '</td><td class="num">2</td><td><span class="mono">docs.stream</span></td>' \
           % stream_id in html
    html = get(server, "/tables/plain")[2].decode()
    assert "Search indexes" not in html and "Stream" not in html
    assert jget(server, "/tables/plain?format=json")["stream"] is None

    m = scrape(server)
    key = (("index", "docs_idx"), ("table", "docs"))
    assert m[("regions_search_index_info", (("index", "docs_idx"), ("phase", "INCR"),
                                            ("table", "docs")))] == 1
    assert m[("regions_search_index_documents", key)] == 20
    assert m[("regions_search_index_storage_bytes", key)] == s["storage_bytes"]
    assert m[("regions_search_index_sync_backlog", key)] == 0
    assert m[("regions_search_index_sync_lag_seconds", key)] == 0
    assert m[("regions_stream_info", (("stream_id", stream_id), ("table", "docs")))] == 1
    assert m[("regions_stream_shards", (("table", "docs"),))] == 2
    assert m[("regions_stream_open_shards", (("table", "docs"),))] == 2
    assert not [k for k in m if k[0].startswith("regions_stream") and
                dict(k[1])["table"] == "plain"]
    info = {dict(labels)["table"]: (dict(labels)["kind"], dict(labels)["base"])
            for (name, labels), v in m.items() if name == "regions_table_info"}
    assert info == {"docs": ("table", ""), "plain": ("table", ""), "docs.feed": ("feed", "docs"),
                    "docs.search.docs_idx": ("search", "docs"),
                    "docs.stream": ("stream", "docs")}
    # a Search through the wire is timed like every API, by its name
    assert m[("regions_api_requests_total", (("api", "Search"),))] == 1
    assert m[("regions_api_request_duration_seconds_count", (("api", "Search"),))] == 1

    # a region splits: its shard closes, one opens per daughter (the stream
    # follows the regions at its table's next write)
    put_docs(client, "docs", 300, size=200)
    wait_for(lambda: jget(server, "/tables/docs?format=json")["recent_splits"], what="a split")

    def resharded():
        put_docs(client, "docs", 1, start=1000)
        d = jget(server, "/tables/docs?format=json")
        st = d["stream"]
        return st["shards"] > st["open_shards"] == len(d["regions"]) and st
    stream = wait_for(resharded, what="a closed shard")
    time.sleep(1.0)             # past the pages' rendering cache
    m = scrape(server)
    assert m[("regions_stream_shards", (("table", "docs"),))] >= stream["shards"] > \
        stream["open_shards"] >= 3


def test_a_search_index_lags_with_its_feed_and_shows_its_back_fill(tmp_path, monkeypatch):
    """The maintainer held: the table's page and /metrics count the feed's
    entries pending as each search index's lag; a new index loading the
    table's rows is in phase FULL; released, INCR with nothing pending."""
    from tablestore.metadata import FieldSchema, FieldType, SearchIndexMeta
    with emb.OTSClient(str(tmp_path / "s")) as client:
        create_docs(client, stream=False)
        client.create_secondary_index("docs", emb.SecondaryIndexMeta("docs_by_n", ["n"], []))
        gate, held = hold_maintainer(client, monkeypatch, "_search_backfill")
        page = console_pages(client)
        try:
            assert held.wait(10)
            before = time.time()
            put_docs(client, "docs", 25)
            (s,) = page("/tables/docs?format=json")["search_indexes"]
            assert (s["backlog"], s["documents"]) == (25, 0)
            assert 0 <= s["lag_seconds"] <= time.time() - before + 1
            html = page("/tables/docs")
            assert "<td>25 entries, oldest " in html
            assert "<b>25 entries pending</b>: the global and search indexes' lag in rows, " \
                   "the oldest written" in html
            m = scrape_client(client)
            key = (("index", "docs_idx"), ("table", "docs"))
            assert m[("regions_search_index_sync_backlog", key)] == 25
            assert m[("regions_search_index_sync_lag_seconds", key)] >= 0
            assert m[("regions_search_index_documents", key)] == 0
            assert m[("regions_index_feed_backlog", (("table", "docs"),))] == 25
            client.create_search_index("docs", "docs_by_title", SearchIndexMeta(
                [FieldSchema("title", FieldType.KEYWORD)]))
            d = page("/tables/docs?format=json")
            assert [(s["name"], s["phase"]) for s in d["search_indexes"]] == [
                ("docs_by_title", "FULL"), ("docs_idx", "INCR")]
            assert "FULL: loading the table&#x27;s rows" in page("/tables/docs")
            m = scrape_client(client)
            assert m[("regions_search_index_info", (("index", "docs_by_title"), ("phase", "FULL"),
                                                    ("table", "docs")))] == 1
        finally:
            gate.set()
        assert client.wait_for_search_index("docs", "docs_idx")
        assert client.wait_for_search_index("docs", "docs_by_title")
        d = page("/tables/docs?format=json")
        assert [(s["phase"], s["documents"], s["backlog"], s["lag_seconds"])
                for s in d["search_indexes"]] == [("INCR", 25, 0, 0.0)] * 2
        assert "<b>nothing pending</b>: the global and search indexes hold every write" in \
            page("/tables/docs")
        m = scrape_client(client)
        for name in ("docs_idx", "docs_by_title"):
            key = (("index", name), ("table", "docs"))
            assert m[("regions_search_index_documents", key)] == 25
            assert m[("regions_search_index_sync_backlog", key)] == 0
            assert m[("regions_search_index_sync_lag_seconds", key)] == 0
