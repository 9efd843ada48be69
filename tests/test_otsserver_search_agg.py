"""Aggregations and group-bys over real HTTP with the official SDK, unchanged
(searchwire.py): each kind goes through the SDK's encoder, the wire and the
SDK's decoder, and must answer what the server's embedded client answers
for the same SDK objects (values, their types, keys, counts, sub-results,
top rows)."""
import json

import pytest
import tablestore as ts

from test_otsserver_sdk import service_error
from test_otsserver_search import start_indexed

N = 60


def columns(i):
    cols = [("k", "k%d" % (i % 5)), ("l", i % 17 - 4), ("d", i / 4.0), ("b", i % 3 == 0),
            ("la", json.dumps([i % 4, 10 + i % 6])), ("g", "%f,%f" % (30 + 0.02 * i, 114.0)),
            ("time", "2022-05-%02d" % (i % 28 + 1))]
    return [c for c in cols if not (c[0] == "l" and i % 11 == 0)]     # some rows lack l


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    srv, c = start_indexed(
        tmp_path_factory.mktemp("agg") / "data", [("id", "INTEGER"), ("s", "STRING")], [
            ts.FieldSchema("k", ts.FieldType.KEYWORD, enable_sort_and_agg=True),
            ts.FieldSchema("l", ts.FieldType.LONG, enable_sort_and_agg=True),
            ts.FieldSchema("d", ts.FieldType.DOUBLE, enable_sort_and_agg=True),
            ts.FieldSchema("b", ts.FieldType.BOOLEAN, enable_sort_and_agg=True),
            ts.FieldSchema("la", ts.FieldType.LONG, is_array=True),
            ts.FieldSchema("g", ts.FieldType.GEOPOINT),
            ts.FieldSchema("time", ts.FieldType.DATE, date_formats=["yyyy-MM-dd"])],
        [ts.Row([("id", i), ("s", "s%d" % (i % 3))], columns(i)) for i in range(N)])
    yield srv, c
    srv.stop()


def plain(value):
    """A result as plain data: the SDK's result objects by their fields."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if hasattr(value, "__dict__"):
        return {k: plain(v) for k, v in vars(value).items()}
    return (type(value).__name__, value)


def both(served, columns_to_get=None, **kw):
    srv, c = served
    kw.setdefault("limit", 0)
    query = kw.pop("query", ts.MatchAllQuery())
    wire = c.search("t", "idx", ts.SearchQuery(query, **kw), columns_to_get)
    embedded = srv.service.client.search("t", "idx", ts.SearchQuery(query, **kw), columns_to_get)
    return wire, embedded


def same(wire, embedded):
    assert plain(wire.agg_results) == plain(embedded.agg_results)
    assert plain(wire.group_by_results) == plain(embedded.group_by_results)


def test_metrics_percentiles_and_top_rows_cross_the_wire(served):
    for aggs in ([ts.Max("l"), ts.Min("d"), ts.Sum("la"), ts.Avg("l", missing_value=100),
                  ts.Count("g")],
                 [ts.DistinctCount("k"), ts.Percentiles("time", [50, 90]),
                  ts.Percentiles("d", [10, 99.9], name="pd"),
                  ts.TopRows(3, ts.Sort([ts.FieldSort("d", ts.SortOrder.DESC)]))]):
        wire, embedded = both(served, aggs=aggs, query=ts.TermQuery("b", False))
        same(wire, embedded)
    wire, embedded = both(served, aggs=[ts.TopRows(2, None)], columns_to_get=ts.ColumnsToGet(
        ["k", "l"], ts.ColumnReturnType.SPECIFIED))
    same(wire, embedded)
    pk, attrs = wire.agg_results[0].value[0]        # row 0 (index order) has no l
    assert pk == [("id", 0), ("s", "s0")] and [(c[0], c[1]) for c in attrs] == [("k", "k0")]
    # values keep their types: a LONG's percentiles are integers, a DOUBLE's floats
    wire, _ = both(served, aggs=[ts.Percentiles("l", [50]), ts.Percentiles("d", [50], name="d")])
    assert isinstance(wire.agg_results[0].value[0].value, int)
    assert isinstance(wire.agg_results[1].value[0].value, float)


def test_every_group_by_crosses_the_wire_with_sub_results(served):
    subs = dict(sub_aggs=[ts.Sum("l", name="s"), ts.TopRows(1, None, name="top")],
                sub_group_bys=[ts.GroupByField("b", name="inner",
                                               sub_aggs=[ts.Count("d", name="c")])])
    wire, embedded = both(served, group_bys=[
        ts.GroupByField("k", size=3, group_by_sort=[ts.SubAggSort(ts.SortOrder.DESC, "s")],
                        **subs),
        ts.GroupByRange("l", [(0, 5), (-10, 0), (5, 100)], name="r", **subs),
        ts.GroupByFilter([ts.TermQuery("b", True), ts.RangeQuery("d", 3.0)], name="f", **subs),
        ts.GroupByGeoDistance("g", ts.GeoPoint(30.5, 114.0), [(0, 20000), (20000, 200000)],
                              name="geo", **subs),
        ts.GroupByHistogram("d", 2.5, ts.FieldRange(0.0, 10.0), name="h", **subs)])
    same(wire, embedded)
    field, ranges, filters, geo, hist = wire.group_by_results
    assert [it.key for it in field.items] and all(it.sub_group_bys for it in field.items)
    assert [(it.range_from, it.range_to) for it in ranges.items] == [(-10, 0), (0, 5), (5, 100)]
    assert sum(it.row_count for it in geo.items) > 0
    assert all(isinstance(it.key, float) for it in hist.items)
    wire, embedded = both(served, group_bys=[ts.GroupByHistogram("l", 4, ts.FieldRange(-4, 12),
                                                                 min_doc_count=0)])
    same(wire, embedded)
    assert all(isinstance(it.key, int) for it in wire.group_by_results[0].items)
    wire, embedded = both(served, group_bys=[ts.GroupByDateHistogram(
        "time", ts.DateTimeValue(3, ts.DateTimeUnit.DAY),
        ts.FieldRange("2022-05-02", "2022-05-20"), time_zone="+08:00",
        offset=ts.DateTimeValue(12, ts.DateTimeUnit.HOUR), min_doc_count=0,
        group_by_sort=[ts.RowCountSort(ts.SortOrder.DESC)], **subs)])
    same(wire, embedded)
    items = wire.group_by_results[0].items
    # days 2-4 hold 3 rows each, 5-19 two each: 39 in [05-02, 05-20)
    assert sum(it.row_count for it in items) == 39
    day = 86_400_000                    # groups of 3 days from 12:00 at +08:00 (04:00 UTC)
    assert all((it.timestamp + day // 3 - day // 2) % (3 * day) == 0 for it in items)
    assert [it.row_count for it in items] == sorted((it.row_count for it in items), reverse=True)


def test_a_composite_group_by_pages_over_the_wire(served):
    token, keys = None, []
    while True:
        wire, embedded = both(served, group_bys=[ts.GroupByComposite(
            [ts.GroupByField("k", name="kk"), ts.GroupByField("b", name="bb")], size=3,
            next_token=token, sub_aggs=[ts.Max("d", name="m")])])
        same(wire, embedded)
        r = wire.group_by_results[0]
        assert r.source_group_by_names == ["kk", "bb"]
        keys += [tuple(it.keys) for it in r.items]
        token = r.next_token
        if not token:
            break
    assert keys == sorted((("k%d" % i, b) for i in range(5) for b in ("false", "true")),
                          key=lambda k: (k[0], k[1] == "true"))


def test_a_geo_grid_crosses_the_wire(served):
    wire, embedded = both(served, group_bys=[ts.GroupByGeoGrid(
        "g", ts.GeoHashPrecision.GHP_39KM_19KM_4, size=3, sub_aggs=[ts.Avg("d", name="a")])])
    same(wire, embedded)
    items = wire.group_by_results[0].items
    assert len(items) == 3 and all(len(it.key) == 4 for it in items)
    assert all(it.geo_grid.top_left.lat > it.geo_grid.bottom_right.lat for it in items)


def test_aggregation_errors_as_the_sdk_sees_them(served):
    _, c = served
    status, code, message = service_error(c.search, "t", "idx", ts.SearchQuery(
        ts.MatchAllQuery(), limit=0, aggs=[ts.Avg("nope")]))
    assert (status, code, message) == (400, "OTSParameterInvalid",
                                       "[avg agg] field: nope does not exist")
    status, code, _ = service_error(c.search, "t", "idx", ts.SearchQuery(
        ts.MatchAllQuery(), limit=0, aggs=[ts.TopRows(10000, None)]))
    assert (status, code) == (400, "OTSParameterInvalid")
