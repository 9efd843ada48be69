"""Aggregations and group-bys of search indexes on the embedded client
(regions/tablestore/searchagg.py): every kind, checked against a brute-force
computation over the table's rows (exact where the service is exact), with
the service's limits, errors and empty results."""
import json
import math
import random

import pytest
from tablestore import (Avg, BoolQuery, Count, DistinctCount, FieldRange, FieldSchema, FieldType,
                        GeoPoint, GroupByField, GroupByFilter, GroupByGeoDistance,
                        GroupByHistogram, GroupByRange, GroupKeySort, Max, MatchAllQuery, Min,
                        Percentiles, PrimaryKeySort, RangeQuery, RowCountSort, SearchIndexMeta,
                        SearchQuery, Sort, SortOrder, SubAggSort, Sum, TermQuery, TopRows,
                        FieldSort)

from regions.tablestore import (CapacityUnit, Condition, OTSClient, OTSServiceError,
                                ReservedThroughput, Row, TableMeta, TableOptions)
from regions.tablestore.searchagg import _rank_value

FIELDS = [FieldSchema("k", FieldType.KEYWORD, enable_sort_and_agg=True),
          FieldSchema("l", FieldType.LONG, enable_sort_and_agg=True),
          FieldSchema("d", FieldType.DOUBLE, enable_sort_and_agg=True),
          FieldSchema("b", FieldType.BOOLEAN, enable_sort_and_agg=True),
          FieldSchema("t", FieldType.TEXT),
          FieldSchema("la", FieldType.LONG, is_array=True),
          FieldSchema("ka", FieldType.KEYWORD, is_array=True),
          FieldSchema("g", FieldType.GEOPOINT),
          FieldSchema("time", FieldType.DATE, date_formats=["yyyy-MM-dd"]),
          FieldSchema("n", FieldType.NESTED, sub_field_schemas=[
              FieldSchema("nl", FieldType.LONG), FieldSchema("nk", FieldType.KEYWORD)])]
N = 120


def values(i, rnd):
    """Row i's columns: some rows lack some columns."""
    cols = {"k": "k%d" % rnd.randrange(7), "l": rnd.randrange(-20, 50),
            "d": round(rnd.uniform(-5, 5), 3), "b": rnd.random() < 0.4,
            "t": "text %d" % i,
            "la": json.dumps(rnd.sample(range(10), rnd.randrange(3))),
            "ka": json.dumps(["a%d" % rnd.randrange(4) for _ in range(2)]),
            "g": "%f,%f" % (30 + rnd.uniform(0, 2), 114 + rnd.uniform(0, 2)),
            "time": "2022-05-%02d" % rnd.randrange(1, 29),
            "n": json.dumps([{"nl": rnd.randrange(100), "nk": "n%d" % rnd.randrange(3)}
                             for _ in range(rnd.randrange(1, 3))])}
    for name in ("l", "d", "k", "g"):
        if rnd.random() < 0.15:
            del cols[name]
    return cols


@pytest.fixture(scope="module")
def data():
    """(client, {id: columns}) with search index idx in sync."""
    rnd = random.Random(7)
    c = OTSClient(None)
    c.create_table(TableMeta("t", [("id", "INTEGER")]), TableOptions(),
                   ReservedThroughput(CapacityUnit(0, 0)))
    rows = {}
    for i in range(N):
        rows[i] = values(i, rnd)
        c.put_row("t", Row([("id", i)], list(rows[i].items())), Condition("IGNORE"))
    c.create_search_index("t", "idx", SearchIndexMeta(list(FIELDS)))
    assert c.wait_for_search_index("t", "idx")
    yield c, rows
    c.close()


def search(c, query=None, aggs=(), group_bys=(), **kw):
    kw.setdefault("limit", 0)
    return c.search("t", "idx", SearchQuery(query or MatchAllQuery(), aggs=list(aggs),
                                            group_bys=list(group_bys), **kw))


def refused(c, **kw):
    with pytest.raises(OTSServiceError) as e:
        search(c, **kw)
    assert e.value.code == "OTSParameterInvalid"
    return e.value.message


def field_values(cols, name):
    """What the index holds of ``name`` for one row: a list of values."""
    if name.startswith("n."):
        return [o[name[2:]] for o in json.loads(cols["n"])]
    if name not in cols:
        return []
    if name == "la":
        return json.loads(cols[name])
    if name == "ka":                       # keywords are a set
        return sorted(set(json.loads(cols[name])))
    return [cols[name]]


def exact_percentile(vals, p):
    vals = sorted(vals)
    pos = p / 100 * (len(vals) - 1)
    lo = math.floor(pos)
    if lo + 1 >= len(vals):
        return vals[lo]
    return vals[lo] + (pos - lo) * (vals[lo + 1] - vals[lo])


# -- metrics ------------------------------------------------------------------------
@pytest.mark.parametrize("field", ["l", "d", "la", "n.nl"])
def test_metrics_match_brute_force(data, field):
    c, rows = data
    vals = [v for cols in rows.values() for v in field_values(cols, field)]
    got = {}
    for aggs in ([Max(field), Min(field), Sum(field), Avg(field), Count(field)],
                 [DistinctCount(field), Percentiles(field, [99, 0, 50, 25.5])]):
        got.update((a.name, a.value) for a in search(c, aggs=aggs).agg_results)
    assert got["max"] == max(vals) and got["min"] == min(vals)
    assert got["sum"] == pytest.approx(sum(vals))
    assert got["avg"] == pytest.approx(sum(vals) / len(vals))
    assert got["count"] == len(vals)
    assert got["distinct_count"] == len(set(vals))
    # by percentile ascending, each in the field's type (LONG truncated)
    assert [p.key for p in got["percentiles"]] == [0, 25.5, 50, 99]
    for p in got["percentiles"]:
        want = exact_percentile(vals, p.key)
        if field == "d":
            assert p.value == pytest.approx(want)
        else:
            assert isinstance(p.value, int) and p.value == int(want)


def test_count_and_distinct_count_of_every_countable_type(data):
    c, rows = data
    for field in ("k", "b", "ka", "g", "time", "n.nk"):
        vals = [v for cols in rows.values() for v in field_values(cols, field)
                if not (field == "time" and v is None)]
        r = search(c, aggs=[Count(field), DistinctCount(field)])
        assert [a.value for a in r.agg_results] == [len(vals), len(set(vals))], field


def test_metrics_follow_the_query_and_missing(data):
    c, rows = data
    picked = [cols for cols in rows.values() if cols["b"]]
    with_l = [cols["l"] for cols in picked if "l" in cols]
    lacking = sum(1 for cols in picked if "l" not in cols)
    assert lacking                     # the data has rows without l among them
    r = search(c, TermQuery("b", True),
               aggs=[Sum("l", name="s"), Sum("l", missing_value=1000, name="sm"),
                     Avg("l", missing_value=0, name="am"), Max("l", missing_value=1000, name="mm"),
                     DistinctCount("l", missing_value=-999, name="dm")])
    got = {a.name: a.value for a in r.agg_results}
    assert got["s"] == sum(with_l)
    assert got["sm"] == sum(with_l) + 1000 * lacking
    assert got["am"] == pytest.approx(sum(with_l) / len(picked))
    assert got["mm"] == 1000
    assert got["dm"] == len(set(with_l) | {-999})


def test_metrics_of_nothing_are_the_services(data):
    c, _ = data
    values = []
    for aggs in ([Max("l"), Min("l"), Avg("l"), Sum("l"), Count("l")],
                 [DistinctCount("l"), Percentiles("l", [50]), TopRows(3, None)]):
        values += [a.value for a in search(c, TermQuery("k", "no such key"), aggs=aggs).agg_results]
    assert values == [-math.inf, math.inf, math.inf, 0, 0, 0, [], []]


def test_top_rows_sorted_and_limited(data):
    c, rows = data
    r = search(c, TermQuery("b", False), aggs=[
        TopRows(3, Sort([PrimaryKeySort(SortOrder.DESC)]), name="desc"),
        TopRows(2, None, name="default")], sort=Sort([FieldSort("l", SortOrder.ASC)]))
    ids = sorted(i for i, cols in rows.items() if not cols["b"])
    got = {a.name: a.value for a in r.agg_results}
    assert [row[0][0][1] for row in got["desc"]] == ids[::-1][:3]
    # without a sort of their own, top rows follow the search's (l ascending, missing last)
    by_l = sorted(ids, key=lambda i: (rows[i].get("l") is None, rows[i].get("l", 0), i))
    assert [row[0][0][1] for row in got["default"]] == by_l[:2]
    assert got["desc"][0][1] == []          # the search's columns: none asked


# -- group-bys ----------------------------------------------------------------------
def test_group_by_field_counts_sorts_and_sub_aggregations(data):
    c, rows = data
    groups = {}
    for i, cols in rows.items():
        if "k" in cols:
            groups.setdefault(cols["k"], []).append(i)
    r = search(c, group_bys=[
        GroupByField("k", size=3, sub_aggs=[Sum("l", name="s"), TopRows(1, Sort(
            [PrimaryKeySort(SortOrder.DESC)]), name="last")], name="by_count"),
        GroupByField("k", size=100, group_by_sort=[GroupKeySort(SortOrder.DESC)],
                     name="by_key"),
        GroupByField("k", size=4, group_by_sort=[SubAggSort(SortOrder.ASC, "s")],
                     sub_aggs=[Sum("l", name="s")], name="by_sum"),
        GroupByField("k", size=2, group_by_sort=[RowCountSort(SortOrder.ASC)], name="few")])
    by = {g.name: g.items for g in r.group_by_results}
    count_order = sorted(groups, key=lambda k: (-len(groups[k]), k))
    assert [it.key for it in by["by_count"]] == count_order[:3]
    for it in by["by_count"]:
        members = groups[it.key]
        assert it.row_count == len(members)
        subs = {a.name: a.value for a in it.sub_aggs}
        assert subs["s"] == sum(rows[i].get("l", 0) for i in members)
        assert [row[0][0][1] for row in subs["last"]] == [max(members)]
    assert [it.key for it in by["by_key"]] == sorted(groups, reverse=True)
    sums = {k: sum(rows[i].get("l", 0) for i in m) for k, m in groups.items()}
    assert [it.key for it in by["by_sum"]] == sorted(groups, key=lambda k: (sums[k], k))[:4]
    assert [it.key for it in by["few"]] == sorted(groups, key=lambda k: (len(groups[k]), k))[:2]


def test_group_by_field_keys_of_each_type_and_nested_group_bys(data):
    c, rows = data
    r = search(c, group_bys=[
        GroupByField("b", sub_group_bys=[GroupByField("l", size=2, name="inner")],
                     sub_aggs=[Count("l", name="n"), Count("ka", name="nka")]),
        GroupByField("la", size=20, name="arr"), GroupByField("ka", name="karr")])
    by_b, arr, karr = r.group_by_results
    for it in by_b.items:
        members = [cols for cols in rows.values() if cols["b"] == (it.key == "true")]
        assert it.key in ("true", "false") and it.row_count == len(members)
        assert it.sub_aggs[0].value == sum(1 for m in members if "l" in m)
        # a keyword's count inside a group (tantivy cannot nest it: its own scope)
        assert it.sub_aggs[1].value == sum(len(set(json.loads(m["ka"]))) for m in members)
        counts = {}
        for m in members:
            if "l" in m:
                counts[m["l"]] = counts.get(m["l"], 0) + 1
        want = sorted(counts, key=lambda v: (-counts[v], v))[:2]
        assert [x.key for x in it.sub_group_bys[0].items] == [str(v) for v in want]
    # an array counts each row once per distinct value
    per_value = {}
    for cols in rows.values():
        for v in set(json.loads(cols["la"])):
            per_value[str(v)] = per_value.get(str(v), 0) + 1
    assert {it.key: it.row_count for it in arr.items} == per_value
    per_key = {}
    for cols in rows.values():
        for v in set(json.loads(cols["ka"])):
            per_key[v] = per_key.get(v, 0) + 1
    assert {it.key: it.row_count for it in karr.items} == per_key


def test_group_by_range_and_histogram(data):
    c, rows = data
    ls = [cols["l"] for cols in rows.values() if "l" in cols]
    r = search(c, group_bys=[
        GroupByRange("l", [(10, 30), (-100, 0), (0, 10)], sub_aggs=[Max("l", name="m")]),
        GroupByHistogram("l", 10, FieldRange(-5, 30), sub_aggs=[Count("l", name="c")]),
        GroupByHistogram("d", 2.5, FieldRange(-5.0, 5.0), min_doc_count=5,
                         group_by_sort=[RowCountSort(SortOrder.DESC)], name="d")])
    ranges, hist, dhist = r.group_by_results
    # ranges by from, ascending; [from, to)
    assert [(it.range_from, it.range_to) for it in ranges.items] == [(-100, 0), (0, 10), (10, 30)]
    for it in ranges.items:
        inside = [v for v in ls if it.range_from <= v < it.range_to]
        assert it.row_count == len(inside) and it.sub_aggs[0].value == max(inside)
    # histogram groups whose key is in [min, max]; the last one's values may pass max
    want = {}
    for v in ls:
        key = math.floor(v / 10) * 10
        if -5 <= key <= 30:
            want[key] = want.get(key, 0) + 1
    assert [(it.key, it.value) for it in hist.items] == sorted(want.items())
    assert all(isinstance(it.key, int) and it.sub_aggs[0].value == it.value for it in hist.items)
    ds = [cols["d"] for cols in rows.values() if "d" in cols]
    dwant = {}
    for v in ds:
        dwant[math.floor(v / 2.5) * 2.5] = dwant.get(math.floor(v / 2.5) * 2.5, 0) + 1
    dwant = {k: n for k, n in dwant.items() if -5 <= k <= 5 and n >= 5}
    assert [(it.key, it.value) for it in dhist.items] == sorted(
        dwant.items(), key=lambda kv: (-kv[1], kv[0]))


def test_group_by_filter_and_geo_distance(data):
    c, rows = data
    from regions.tablestore.search import _haversine
    r = search(c, group_bys=[
        GroupByFilter([TermQuery("b", True), RangeQuery("l", 0, 10, include_lower=True),
                       BoolQuery(must_queries=[TermQuery("k", "k1")])],
                      sub_aggs=[Count("d", name="c")]),
        GroupByGeoDistance("g", GeoPoint(31, 115), [(0, 50_000), (50_000, 100_000),
                                                   (100_000, 1e7)])])
    filters, geo = r.group_by_results
    tests = [lambda cols: cols["b"], lambda cols: 0 <= cols.get("l", -1) < 10,
             lambda cols: cols.get("k") == "k1"]
    for it, test in zip(filters.items, tests):
        members = [cols for cols in rows.values() if test(cols)]
        assert it.row_count == len(members)
        assert it.sub_aggs[0].value == sum(1 for m in members if "d" in m)
    for it in geo.items:
        want = 0
        for cols in rows.values():
            if "g" in cols:
                lat, lon = map(float, cols["g"].split(","))
                want += it.range_from <= _haversine(31, 115, lat, lon) < it.range_to
        assert it.row_count == want
    assert sum(it.row_count for it in geo.items) == sum(1 for cols in rows.values() if "g" in cols)


def test_random_group_bys_against_brute_force(data):
    """A model test: random field group-bys with a random metric inside,
    under random queries, compared with a computation over the rows."""
    c, rows = data
    rnd = random.Random(11)
    metrics = {"Sum": (Sum, sum), "Max": (Max, max), "Min": (Min, min),
               "Count": (Count, len)}
    for _ in range(25):
        key = rnd.choice(["k", "b", "l"])
        metric = rnd.choice(sorted(metrics))
        lo = rnd.randrange(-20, 40)
        query = RangeQuery("l", lo, lo + rnd.randrange(5, 40), include_lower=True)
        cls, fn = metrics[metric]
        r = search(c, query, group_bys=[GroupByField(key, size=50, sub_aggs=[cls("d", name="m")])])
        want = {}
        for cols in rows.values():
            if "l" in cols and query.range_from <= cols["l"] < query.range_to and key in cols:
                k = cols[key]
                k = ("true" if k else "false") if key == "b" else str(k)
                want.setdefault(k, []).append(cols.get("d"))
        got = {it.key: (it.row_count, it.sub_aggs[0].value) for it in r.group_by_results[0].items}
        assert set(got) == set(want)
        for k, members in want.items():
            ds = [d for d in members if d is not None]
            empty = {"Max": -math.inf, "Min": math.inf, "Sum": 0, "Count": 0}[metric]
            assert got[k][0] == len(members)
            assert got[k][1] == pytest.approx(fn(ds) if ds else empty), (key, metric, k)


# -- limits and errors --------------------------------------------------------------
def test_refusals_name_what_is_wrong(data):
    c, _ = data
    assert refused(c, aggs=[Sum("b")]) == \
        "[sum agg] field_name:b type:boolean is invalid, allow [long, double]"
    assert refused(c, aggs=[Avg("nope")]) == "[avg agg] field: nope does not exist"
    assert "type:text" in refused(c, aggs=[Count("t")])
    assert "type:keyword" in refused(c, aggs=[Percentiles("k", [50])])
    assert "percentiles" in refused(c, aggs=[Percentiles("l", [101])]).lower()
    assert "TopRows" in refused(c, aggs=[TopRows(10000, None)])
    assert "Too many aggregations" in refused(c, aggs=[Max("l", name="m%d" % i)
                                                       for i in range(6)])
    assert "Duplicated" in refused(c, aggs=[Max("l", name="m"), Min("l", name="m")])
    assert "name" in refused(c, aggs=[Max("l", name="")])
    assert "size" in refused(c, group_bys=[GroupByField("k", size=2001)])
    deep = GroupByField("k", sub_group_bys=[GroupByField("l", sub_group_bys=[
        GroupByField("b", sub_group_bys=[GroupByField("d")])])])
    assert "deeper" in refused(c, group_bys=[deep])
    assert "from 1 to 100" in refused(c, group_bys=[GroupByRange("l", [(0, 1)] * 101)])
    assert "from 1 to 10 " in refused(c, group_bys=[GroupByGeoDistance(
        "g", GeoPoint(30, 114), [(0, 1)] * 11)])
    assert "10" in refused(c, group_bys=[GroupByFilter([TermQuery("b", True)] * 11)])
    assert "more than 2000" in refused(c, group_bys=[GroupByHistogram("l", 1, FieldRange(0, 5000))])
    assert "interval" in refused(c, group_bys=[GroupByHistogram("l", 0, FieldRange(0, 5))])
    assert "SubAggSort" in refused(c, group_bys=[GroupByField(
        "k", group_by_sort=[SubAggSort(SortOrder.ASC, "absent")])])
    assert "type:text" in refused(c, group_bys=[GroupByField("t")])


def test_aggregations_with_rows_and_paging(data):
    """Aggregations ride along a normal search: rows, total count and
    paging are those of the search alone."""
    c, rows = data
    r = c.search("t", "idx", SearchQuery(TermQuery("b", True), limit=5, get_total_count=True,
                                         aggs=[Count("b")]))
    n = sum(1 for cols in rows.values() if cols["b"])
    assert r.total_count == n and len(r.rows) == 5 and r.agg_results[0].value == n


def test_rank_value_interpolates():
    keys, ends = [1, 2, 10], [2, 3, 4]      # values 1, 1, 2, 10
    assert _rank_value(keys, ends, 4, 0) == 1
    assert _rank_value(keys, ends, 4, 100) == 10
    assert _rank_value(keys, ends, 4, 50) == pytest.approx(1.5)
    assert _rank_value(keys, ends, 4, 90) == pytest.approx(2 + 0.7 * 8)
    assert _rank_value([], [], 0, 50) is None


def test_an_engine_of_an_older_layout_is_rebuilt_from_the_table(tmp_path):
    """Files of another engine layout (an older version's schema: GEO_POINT
    values not columnar) are replaced by a back-fill at the next open."""
    import os
    from regions.tablestore.search import LAYOUT_FILE
    c = OTSClient(str(tmp_path))
    c.create_table(TableMeta("t", [("id", "INTEGER")]), TableOptions(),
                   ReservedThroughput(CapacityUnit(0, 0)))
    for i in range(30):
        c.put_row("t", Row([("id", i)], [("g", "%d,%d" % (i % 4, i % 3))]), Condition("IGNORE"))
    c.create_search_index("t", "idx", SearchIndexMeta([FieldSchema("g", FieldType.GEOPOINT)]))
    assert c.wait_for_search_index("t", "idx")
    c.close()
    [marker] = [os.path.join(d, LAYOUT_FILE) for d, _, files in os.walk(tmp_path)
                if LAYOUT_FILE in files]
    with open(marker, "w") as f:
        f.write("1")
    c = OTSClient(str(tmp_path))
    try:
        assert c.wait_for_search_index("t", "idx")
        r = search(c, aggs=[Count("g"), DistinctCount("g")], get_total_count=True)
        assert r.total_count == 30 and [a.value for a in r.agg_results] == [30, 12]
        assert open(marker).read() != "1"
    finally:
        c.close()


def test_double_sums_and_averages_drop_the_summing_orders_last_bits():
    """Avg over 5.1..9.1 with missing 9.1 is 8.1 (the Go SDK's live test),
    not tantivy's 8.099999999999998; an open geo range starts at 0 metres."""
    c = OTSClient(None)
    try:
        c.create_table(TableMeta("m", [("id", "INTEGER")]), TableOptions(),
                       ReservedThroughput(CapacityUnit(0, 0)))
        for i in range(10):
            c.put_row("m", Row([("id", i)], [("g", "30.0,120.0")] + (
                [("x", i + 0.1)] if i >= 5 else [])), Condition("IGNORE"))
        c.create_search_index("m", "idx", SearchIndexMeta([
            FieldSchema("x", FieldType.DOUBLE), FieldSchema("g", FieldType.GEOPOINT)]))
        assert c.wait_for_search_index("m", "idx")
        r = c.search("m", "idx", SearchQuery(MatchAllQuery(), limit=0, aggs=[
            Avg("x", missing_value=9.1), Sum("x", name="s")], group_bys=[
            GroupByGeoDistance("g", GeoPoint(30, 120), [(float("-inf"), 100)])]))
        assert [a.value for a in r.agg_results] == [8.1, 35.5]
        item = r.group_by_results[0].items[0]
        assert (item.range_from, item.range_to, item.row_count) == (0, 100, 10)
    finally:
        c.close()


def test_date_histogram_in_a_time_zone_with_an_offset_and_calendar_units():
    """GroupByDateHistogram: groups of 2 days from 00:00 +08:00 shifted by a
    day (the PHP SDK's live test's shape: 9 groups of 05-01..05-18), weeks
    from Mondays, months in the zone; the values counted are those in
    [min, max); empty groups only with min_doc_count 0 between full ones."""
    import datetime
    from tablestore import DateTimeUnit, DateTimeValue, GroupByDateHistogram
    zone = datetime.timezone(datetime.timedelta(hours=8))
    base = int(datetime.datetime(2017, 5, 1, tzinfo=zone).timestamp() * 1000)
    c = OTSClient(None)
    try:
        c.create_table(TableMeta("d", [("id", "INTEGER")]), TableOptions(),
                       ReservedThroughput(CapacityUnit(0, 0)))
        times = {i: base + i * 3 * 3_600_000 for i in range(135) if not 40 <= i < 72}
        for i, t in times.items():
            c.put_row("d", Row([("id", i)], [("d", t), ("l", i)]), Condition("IGNORE"))
        c.create_search_index("d", "idx", SearchIndexMeta([
            FieldSchema("d", FieldType.DATE, date_formats=["yyyy-MM-dd HH:mm:ss"]),
            FieldSchema("l", FieldType.LONG)]))
        assert c.wait_for_search_index("d", "idx")

        def groups(**kw):
            g = GroupByDateHistogram("d", **kw)
            items = c.search("d", "idx", SearchQuery(MatchAllQuery(), limit=0, group_bys=[
                g])).group_by_results[0].items
            return [(it.timestamp, it.row_count, [a.value for a in it.sub_aggs]) for it in items]

        lo, hi = base + 1000, base + 18 * 86_400_000 + 1000
        got = groups(interval=DateTimeValue(2, DateTimeUnit.DAY), field_range=FieldRange(lo, hi),
                     time_zone="+08:00", offset=DateTimeValue(1, DateTimeUnit.DAY),
                     min_doc_count=0, sub_aggs=[Max("l", name="m")])
        day = 86_400_000
        want = []
        for k in range(9):
            start = base + 2 * k * day
            inside = [i for i, t in times.items() if start <= t < start + 2 * day and lo <= t < hi]
            want.append((start, len(inside), [float(max(inside))] if inside else [-math.inf]))
        assert got == want and any(n == 0 for _, n, _ in got)    # an empty group kept (0)
        assert [g[0] for g in groups(interval=DateTimeValue(2, DateTimeUnit.DAY),
                                     field_range=FieldRange(lo, hi), time_zone="+08:00",
                                     offset=DateTimeValue(1, DateTimeUnit.DAY))] == \
            [w[0] for w in want if w[1]]                          # none empty by default
        weeks = groups(interval=DateTimeValue(1, DateTimeUnit.WEEK),
                       field_range=FieldRange("2017-04-01 00:00:00", "2017-06-01 00:00:00"))
        assert all(datetime.datetime.fromtimestamp(t / 1000, datetime.timezone.utc).weekday() == 0
                   for t, _, _ in weeks)
        assert sum(n for _, n, _ in weeks) == len(times)
        months = groups(interval=DateTimeValue(1, DateTimeUnit.MONTH), time_zone="+08:00",
                        field_range=FieldRange("2017-01-01 00:00:00", "2018-01-01 00:00:00"))
        assert months == [(base, len(times), [])]
        for bad in (dict(interval=DateTimeValue(0, DateTimeUnit.DAY)),
                    dict(interval=DateTimeValue(1, DateTimeUnit.DAY), time_zone="8 hours"),
                    dict(interval=DateTimeValue(1, DateTimeUnit.SECOND))):
            with pytest.raises(OTSServiceError) as e:
                groups(field_range=FieldRange(lo, hi), **bad)
            assert e.value.code == "OTSParameterInvalid"
    finally:
        c.close()


def test_composite_group_by_pages_through_every_combination(data):
    """GroupByComposite over a keyword and a boolean (and a histogram):
    every combination with rows, in key order, a page at a time by its
    next_token; each count and sub-aggregation as computed over the rows."""
    from tablestore import GroupByComposite
    c, rows = data
    want = {}
    for cols in rows.values():
        if "k" in cols and "l" in cols:
            key = (cols["k"], "true" if cols["b"] else "false", str(cols["l"] // 10 * 10))
            want.setdefault(key, []).append(cols["l"])
    got, token, pages = [], None, 0
    while True:
        g = GroupByComposite([GroupByField("k"), GroupByField("b"),
                              GroupByHistogram("l", 10, FieldRange(-100, 100))],
                             size=7, next_token=token, sub_aggs=[Sum("l", name="s")])
        r = search(c, group_bys=[g]).group_by_results[0]
        assert r.source_group_by_names == ["group_by_field", "group_by_field",
                                           "group_by_histogram"]
        got += [(tuple(it.keys), it.row_count, it.sub_aggs[0].value) for it in r.items]
        pages += 1
        token = r.next_token
        if not token:
            break
    expect = sorted(want, key=lambda k: (k[0], k[1] == "true", int(k[2])))
    assert [g[0] for g in got] == expect and pages == -(-len(expect) // 7)
    assert all(n == len(want[k]) and s == sum(want[k]) for k, n, s in got)


def _geohash_reference(lat, lon, chars):
    """Geohash by bisection (the textbook algorithm, independent of ours)."""
    alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
    lat_r, lon_r, bits, out, even, ch, n = [-90.0, 90.0], [-180.0, 180.0], 0, "", True, 0, 0
    while len(out) < chars:
        r, v = (lon_r, lon) if even else (lat_r, lat)
        mid = (r[0] + r[1]) / 2
        ch = ch << 1 | (v >= mid)
        r[v < mid] = mid
        even, n = not even, n + 1
        if n == 5:
            out, ch, n = out + alphabet[ch], 0, 0
    return out


def test_geo_grid_cells_match_the_textbook_geohash(data):
    from tablestore import GeoHashPrecision, GroupByGeoGrid
    c, rows = data
    for precision in (GeoHashPrecision.GHP_156KM_156KM_3, GeoHashPrecision.GHP_39KM_19KM_4):
        want = {}
        for cols in rows.values():
            if "g" in cols:
                lat, lon = map(float, cols["g"].split(","))
                key = _geohash_reference(lat, lon, int(precision))
                want[key] = want.get(key, 0) + 1
        r = search(c, group_bys=[GroupByGeoGrid("g", precision, size=5,
                                                sub_aggs=[Count("g", name="n")])])
        items = r.group_by_results[0].items
        top = sorted(want.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        assert [(it.key, it.row_count) for it in items] == top
        for it in items:
            assert it.sub_aggs[0].value == it.row_count
            box = it.geo_grid          # the cell holds the points of its key
            assert _geohash_reference((box.top_left.lat + box.bottom_right.lat) / 2,
                                      (box.top_left.lon + box.bottom_right.lon) / 2,
                                      int(precision)) == it.key


def test_a_panic_of_the_engine_is_an_internal_error_not_an_escape():
    """tantivy panics (a pyo3 PanicException, a BaseException: on a
    value_count of a string column inside a bucket, in 0.25) become
    OTSInternalServerError; other BaseExceptions pass through."""
    from regions.tablestore.search import aggregate

    class PanicException(BaseException):
        pass

    class Searcher:
        def __init__(self, error):
            self.error = error

        def aggregate(self, query, spec):
            raise self.error

    with pytest.raises(OTSServiceError) as e:
        aggregate(Searcher(PanicException("unexpected type Str")), None, {})
    assert e.value.code == "OTSInternalServerError"
    with pytest.raises(KeyboardInterrupt):
        aggregate(Searcher(KeyboardInterrupt()), None, {})
