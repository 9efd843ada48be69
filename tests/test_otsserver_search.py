"""Search indexes over real HTTP with the official SDK, unchanged (searchwire.py).

Each query type the engine serves goes through the SDK's encoder, the wire
and the SDK's decoder, and must answer what the server's embedded client
answers for the same SDK objects (rows with their columns, total count,
next token, scores); the index's lifecycle, describe and its sync point,
paging, columns, parallel scan, and the errors as the SDK sees them.
"""
import json
import logging
import math
import time

import pytest
import tablestore as ts
from tablestore.protobuf import search_pb2 as spb

from regions.otsserver.searchwire import ConstScoreQuery
from test_otsserver_sdk import error_of, raw_post, sdk, service_error

logging.getLogger("tablestore").addHandler(logging.NullHandler())
logging.getLogger("tablestore").setLevel(logging.CRITICAL)

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape"]
FIELDS = [ts.FieldSchema("tag", ts.FieldType.KEYWORD, enable_sort_and_agg=True),
          ts.FieldSchema("n", ts.FieldType.LONG, enable_sort_and_agg=True),
          ts.FieldSchema("x", ts.FieldType.DOUBLE, enable_sort_and_agg=True),
          ts.FieldSchema("ok", ts.FieldType.BOOLEAN),
          ts.FieldSchema("body", ts.FieldType.TEXT, analyzer=ts.AnalyzerType.SINGLEWORD,
                         enable_highlighting=True),
          ts.FieldSchema("csv", ts.FieldType.TEXT, analyzer=ts.AnalyzerType.SPLIT,
                         analyzer_parameter=ts.SplitAnalyzerParameter(",")),
          ts.FieldSchema("tags", ts.FieldType.KEYWORD, is_array=True),
          ts.FieldSchema("g", ts.FieldType.GEOPOINT),
          ts.FieldSchema("vec", ts.FieldType.VECTOR, vector_options=ts.VectorOptions(
              ts.VectorDataType.VD_FLOAT_32, ts.VectorMetricType.VM_EUCLIDEAN, 3))]
N = 40


def columns(i):
    cols = [("tag", "t%d" % (i % 4)), ("n", i), ("x", i / 2.0), ("ok", i % 2 == 0),
            ("body", " ".join(WORDS[(i + k) % len(WORDS)] for k in range(3)) + " Pie"),
            ("csv", "a%d,b%d" % (i % 3, i % 5)),
            ("tags", json.dumps(["a%d" % (i % 3), "b%d" % (i % 5)])),
            ("g", "%f,%f" % (30 + 0.01 * i, 120.0)),
            ("vec", json.dumps([float(i % 7), 1.0, float(i % 3)])),
            ("other", "not indexed %d" % i)]
    return [c for c in cols if not (c[0] == "x" and i % 10 == 9)]   # some rows lack x


def start_indexed(path, pk_schema, fields, before, after=()):
    """(server, SDK client): table t (``pk_schema``) with rows ``before``
    (ts.Row) written, search index idx (``fields``) made, rows ``after``
    written, the index in sync."""
    from regions.otsserver.cli import make_server
    srv = make_server(str(path), "127.0.0.1", 0, "inst", "ak", "sk").start()
    c = sdk(srv)
    c.create_table(ts.TableMeta("t", pk_schema), ts.TableOptions(),
                   ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
    for row in before:
        c.put_row("t", row)
    c.create_search_index("t", "idx", ts.SearchIndexMeta(list(fields)))
    for row in after:
        c.put_row("t", row)
    assert srv.service.client.wait_for_search_index("t", "idx")
    return srv, c


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A server with table t (id INTEGER), N rows and search index idx, in
    sync: half the rows written before the index (the back-fill), half after
    (the feed)."""
    srv, c = start_indexed(tmp_path_factory.mktemp("search") / "data", [("id", "INTEGER")],
                           FIELDS, [ts.Row([("id", i)], columns(i)) for i in range(N // 2)],
                           [ts.Row([("id", i)], columns(i)) for i in range(N // 2, N)])
    yield srv, c
    srv.stop()


def both(served, query, columns_to_get=None, **kw):
    """(the SDK's answer over the wire, the embedded client's) to one SearchQuery."""
    srv, c = served
    kw.setdefault("limit", 100)
    kw.setdefault("get_total_count", True)
    wire = c.search("t", "idx", ts.SearchQuery(query, **kw), columns_to_get)
    embedded = srv.service.client.search("t", "idx", ts.SearchQuery(query, **kw), columns_to_get)
    return wire, embedded


def same(wire, embedded):
    assert [(list(pk), list(cols)) for pk, cols in wire.rows] == \
        [(list(pk), list(cols)) for pk, cols in embedded.rows]
    assert wire.total_count == embedded.total_count
    assert wire.is_all_succeed is True
    token = embedded.next_token or b""
    assert (wire.next_token or b"") == (token.encode() if isinstance(token, str) else token)
    assert len(wire.search_hits) == len(wire.rows)
    for w, e in zip(wire.search_hits, embedded.search_hits):
        assert math.isclose(w.score, e.score, rel_tol=1e-6, abs_tol=1e-9) or (
            math.isnan(w.score) and math.isnan(e.score))       # not sorted by score: NaN
        assert w.row == (wire.rows[wire.search_hits.index(w)])


def ids(resp):
    return [pk[0][1] for pk, _ in resp.rows]


QUERIES = {
    "match_all": (ts.MatchAllQuery(), lambda i, c: True),
    "match_or": (ts.MatchQuery("body", "apple fig"),
                 lambda i, c: {"apple", "fig"} & set(c["body"].split())),
    "match_and": (ts.MatchQuery("body", "apple fig", operator=ts.QueryOperator.AND),
                  lambda i, c: {"apple", "fig"} <= set(c["body"].split())),
    "match_case": (ts.MatchQuery("body", "PIE"), lambda i, c: True),
    "match_split": (ts.MatchQuery("csv", "b3"), lambda i, c: i % 5 == 3),
    "match_phrase": (ts.MatchPhraseQuery("body", "banana cherry"),
                     lambda i, c: "banana cherry" in c["body"]),
    "term_keyword": (ts.TermQuery("tag", "t1"), lambda i, c: c["tag"] == "t1"),
    "term_long": (ts.TermQuery("n", 7), lambda i, c: i == 7),
    "term_bool": (ts.TermQuery("ok", True), lambda i, c: c["ok"] is True),
    "term_double": (ts.TermQuery("x", 2.5), lambda i, c: c.get("x") == 2.5),
    "term_array": (ts.TermQuery("tags", "b3"), lambda i, c: "b3" in json.loads(c["tags"])),
    "terms": (ts.TermsQuery("tag", ["t1", "t3"]), lambda i, c: c["tag"] in ("t1", "t3")),
    "range_long": (ts.RangeQuery("n", 5, 12), lambda i, c: 5 <= i < 12),
    "range_long_open": (ts.RangeQuery("n", 5, 12, include_lower=False, include_upper=True),
                        lambda i, c: 5 < i <= 12),
    "range_double": (ts.RangeQuery("x", range_from=10.0), lambda i, c: c.get("x", -1) >= 10),
    "range_keyword": (ts.RangeQuery("tag", "t1", "t3"), lambda i, c: "t1" <= c["tag"] < "t3"),
    "prefix": (ts.PrefixQuery("tag", "t"), lambda i, c: True),
    "wildcard": (ts.WildcardQuery("tag", "*2"), lambda i, c: c["tag"] == "t2"),
    "exists": (ts.ExistsQuery("x"), lambda i, c: "x" in c),
    "bool": (ts.BoolQuery(must_queries=[ts.RangeQuery("n", 0, 30)],
                          must_not_queries=[ts.TermQuery("tag", "t0")],
                          filter_queries=[ts.TermQuery("ok", True)]),
             lambda i, c: i < 30 and c["tag"] != "t0" and c["ok"]),
    "bool_should_msm": (ts.BoolQuery(should_queries=[ts.TermQuery("tag", "t1"),
                                                     ts.TermQuery("n", 2),
                                                     ts.RangeQuery("n", 0, 3)],
                                     minimum_should_match=2),
                        lambda i, c: sum([c["tag"] == "t1", i == 2, i < 3]) >= 2),
    "bool_must_not_only": (ts.BoolQuery(must_not_queries=[ts.TermQuery("tag", "t2")]),
                           lambda i, c: c["tag"] != "t2"),
    "dis_max": (ts.DisMaxQuery([ts.TermQuery("tag", "t1"), ts.TermQuery("n", 0)]),
                lambda i, c: c["tag"] == "t1" or i == 0),
    "function_score": (ts.FunctionScoreQuery(ts.RangeQuery("n", 5, 9), ts.FieldValueFactor("n")),
                       lambda i, c: 5 <= i < 9),
    "geo_distance": (ts.GeoDistanceQuery("g", "30.0,120.0", 3000), lambda i, c: i <= 2),
    "geo_bounding_box": (ts.GeoBoundingBoxQuery("g", "30.105,119.9", "30.085,120.1"),
                         lambda i, c: i in (9, 10)),
    "geo_polygon": (ts.GeoPolygonQuery("g", ["30.195,119.0", "30.195,121.0", "30.215,120.0"]),
                    lambda i, c: i in (20, 21)),
    "knn": (ts.KnnVectorQuery("vec", top_k=5, float32_query_vector=[3.0, 1.0, 0.0]), None),
    "knn_filter": (ts.KnnVectorQuery("vec", top_k=5, float32_query_vector=[3.0, 1.0, 0.0],
                                     filter=ts.TermQuery("tag", "t1")), None),
}


def expected_ids(predicate):
    return [i for i in range(N) if predicate(i, dict(columns(i)))]


@pytest.mark.parametrize("name", list(QUERIES))
def test_each_query_over_the_wire_answers_as_the_embedded_client(served, name):
    query, predicate = QUERIES[name]
    knn = {"limit": 5, "sort": ts.Sort([ts.ScoreSort()])} if predicate is None else {}
    wire, embedded = both(served, query, ts.ColumnsToGet(return_type=ts.ColumnReturnType.ALL),
                          **knn)
    same(wire, embedded)
    if predicate is not None:
        assert sorted(ids(wire)) == expected_ids(predicate)
        assert wire.total_count == len(expected_ids(predicate))
        return
    # KNN: the nearest by euclidean distance, best first (ties in any order)
    allowed = expected_ids(lambda i, c: name == "knn" or c["tag"] == "t1")
    dist = {i: sum((a - b) ** 2 for a, b in zip(json.loads(dict(columns(i))["vec"]),
                                                   [3.0, 1.0, 0.0])) for i in allowed}
    got = ids(wire)
    assert len(got) == 5
    assert sorted(dist[i] for i in got) == sorted(dist.values())[:5]
    scores = [h.score for h in wire.search_hits]
    assert scores == sorted(scores, reverse=True)


def test_const_score_query_over_the_raw_wire(served):
    """The SDK has no ConstScoreQuery class; the wire has the type: send its bytes."""
    srv, _ = served
    term = spb.TermQuery(field_name="tag", term=bytes((3,)) + (2).to_bytes(4, "little") + b"t1")
    inner = spb.Query(type=spb.TERM_QUERY, query=term.SerializeToString())
    const = spb.ConstScoreQuery(filter=inner)
    query = spb.SearchQuery(query=spb.Query(type=spb.CONST_SCORE_QUERY,
                                            query=const.SerializeToString()),
                            limit=100, get_total_count=True,
                            sort=spb.Sort(sorter=[spb.Sorter(score_sort=spb.ScoreSort())]))
    req = spb.SearchRequest(table_name="t", index_name="idx",
                            search_query=query.SerializeToString())
    status, data = raw_post(srv, "Search", req.SerializeToString())
    assert status == 200
    resp = spb.SearchResponse.FromString(data)
    assert resp.total_hits == N // 4 and len(resp.rows) == N // 4
    assert {h.score for h in resp.search_hits} == {1.0}
    embedded = srv.service.client.search("t", "idx", ts.SearchQuery(
        ConstScoreQuery(ts.TermQuery("tag", "t1")), limit=100, get_total_count=True))
    assert embedded.total_count == resp.total_hits


@pytest.mark.parametrize("sort, key", [
    (ts.Sort([ts.FieldSort("n", ts.SortOrder.DESC)]), lambda i: -i),
    (ts.Sort([ts.FieldSort("tag", ts.SortOrder.ASC), ts.FieldSort("n", ts.SortOrder.DESC)]),
     lambda i: ("t%d" % (i % 4), -i)),
    (ts.Sort([ts.PrimaryKeySort(ts.SortOrder.DESC)]), lambda i: -i),
    (ts.Sort([ts.FieldSort("x", ts.SortOrder.ASC)]),
     lambda i: (i % 10 == 9, i if i % 10 != 9 else 0)),     # rows without x last
    (None, lambda i: i),                          # the primary key by default
])
def test_sorts_and_paging_by_token_and_offset(served, sort, key):
    srv, c = served
    expected = sorted(range(N), key=key)
    got, token, pages = [], None, 0
    while True:
        wire, embedded = both(served, ts.MatchAllQuery(), None, sort=sort, limit=7,
                              next_token=token)
        same(wire, embedded)
        got += ids(wire)
        pages += 1
        if not wire.next_token:
            break
        token = wire.next_token
    # ties (the rows without x) in any order: the engine does not break them by key
    assert sorted(got) == list(range(N)) and [key(i) for i in got] == [key(i) for i in expected]
    assert pages == math.ceil(N / 7)
    wire, embedded = both(served, ts.MatchAllQuery(), None, sort=sort, offset=10, limit=5)
    same(wire, embedded)
    assert [key(i) for i in ids(wire)] == [key(i) for i in expected[10:15]]


def test_score_sort_and_scores(served):
    wire, embedded = both(served, ts.MatchQuery("body", "apple fig"), None,
                          sort=ts.Sort([ts.ScoreSort()]))
    same(wire, embedded)
    scores = [h.score for h in wire.search_hits]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0


def test_highlighting(served):
    highlight = ts.Highlight([ts.HighlightParameter("body", 1, 40, "<b>", "</b>")])
    wire, embedded = both(served, ts.MatchQuery("body", "fig"), None, highlight=highlight)
    same(wire, embedded)
    assert wire.rows
    for w, e in zip(wire.search_hits, embedded.search_hits):
        got = [(f.field_name, list(f.field_fragments)) for f in w.highlight_result.highlight_fields]
        assert got == [(f.field_name, list(f.field_fragments))
                       for f in e.highlight_result.highlight_fields]
        (name, (fragment,)), = got
        assert name == "body" and "<b>fig</b>" in fragment
    wire, _ = both(served, ts.MatchQuery("body", "fig"), None)
    assert all(not h.highlight_result.highlight_fields for h in wire.search_hits)


def test_collapse(served):
    wire, embedded = both(served, ts.MatchAllQuery(), None, collapse_field=ts.Collapse("tag"))
    same(wire, embedded)
    assert ids(wire) == [0, 1, 2, 3]


@pytest.mark.parametrize("ctg, names", [
    (None, []),
    (ts.ColumnsToGet(return_type=ts.ColumnReturnType.NONE), []),
    (ts.ColumnsToGet(["n", "other"], ts.ColumnReturnType.SPECIFIED), ["n", "other"]),
    (ts.ColumnsToGet(return_type=ts.ColumnReturnType.ALL_FROM_INDEX),
     sorted(f.field_name for f in FIELDS)),
    (ts.ColumnsToGet(return_type=ts.ColumnReturnType.ALL),
     sorted([f.field_name for f in FIELDS] + ["other"])),
])
def test_columns_to_get(served, ctg, names):
    wire, embedded = both(served, ts.TermQuery("n", 4), ctg)
    same(wire, embedded)
    (pk, cols), = wire.rows
    assert pk == [("id", 4)] and [col[0] for col in cols] == names


def test_describe_list_update_and_the_sync_point(served):
    srv, c = served
    assert c.list_search_index("t") == [("t", "idx")] and c.list_search_index() == [("t", "idx")]
    meta, stat = c.describe_search_index("t", "idx")
    assert [f.field_name for f in meta.fields] == [f.field_name for f in FIELDS]
    assert [f.field_type for f in meta.fields] == [f.field_type for f in FIELDS]
    by_name = {f.field_name: f for f in meta.fields}
    assert by_name["tag"].enable_sort_and_agg and not by_name["body"].enable_sort_and_agg
    assert by_name["tags"].is_array and by_name["n"].index and by_name["n"].store
    assert by_name["body"].analyzer == ts.AnalyzerType.SINGLEWORD
    assert by_name["csv"].analyzer == ts.AnalyzerType.SPLIT
    vec = by_name["vec"].vector_options
    assert (vec.dimension, vec.metric_type, vec.data_type) == \
        (3, ts.VectorMetricType.VM_EUCLIDEAN, ts.VectorDataType.VD_FLOAT_32)
    assert [type(s).__name__ for s in meta.index_sort.sorters] == ["PrimaryKeySort"]
    assert meta.index_setting.routing_fields == [] and meta.time_to_live == -1
    # the sync point: every write acknowledged before it is searchable
    before = time.time_ns()                       # nanoseconds, as the service's
    c.put_row("t", ts.Row([("id", 1000)], [("n", 1000)]))
    deadline = time.monotonic() + 10
    while True:
        _, stat = c.describe_search_index("t", "idx")
        if stat.current_sync_timestamp >= before or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert stat.sync_phase == ts.SyncPhase.INCR and stat.current_sync_timestamp >= before
    assert ids(c.search("t", "idx", ts.SearchQuery(ts.TermQuery("n", 1000)))) == [1000]
    c.delete_row("t", ts.Row([("id", 1000)]), ts.Condition("IGNORE"))
    assert srv.service.client.wait_for_search_index("t", "idx")
    c.update_search_index("t", "idx", ts.SearchIndexMeta([], time_to_live=3 * 86400))
    assert c.describe_search_index("t", "idx")[0].time_to_live == 3 * 86400
    c.update_search_index("t", "idx", ts.SearchIndexMeta([], time_to_live=-1))


def test_create_with_settings_then_delete(served):
    srv, c = served
    meta = ts.SearchIndexMeta([ts.FieldSchema("n", ts.FieldType.LONG, enable_sort_and_agg=True)],
                              index_setting=ts.IndexSetting(routing_fields=["id"]),
                              index_sort=ts.Sort([ts.FieldSort("n", ts.SortOrder.DESC)]),
                              time_to_live=2 * 86400)
    c.create_search_index("t", "second", meta)
    try:
        assert c.list_search_index("t") == [("t", "idx"), ("t", "second")]
        described, stat = c.describe_search_index("t", "second")
        assert described.time_to_live == 2 * 86400 and stat is not None
        assert srv.service.client.wait_for_search_index("t", "second")
        assert c.search("t", "second", ts.SearchQuery(
            ts.MatchAllQuery(), get_total_count=True, limit=0)).total_count == N
    finally:
        c.delete_search_index("t", "second")
    assert c.list_search_index("t") == [("t", "idx")]


def test_parallel_scan_over_the_wire(served):
    srv, c = served
    splits = c.compute_splits("t", "idx")
    assert splits.splits_size >= 1 and isinstance(splits.session_id, str)
    seen = []
    for p in range(splits.splits_size):
        token = None
        while True:
            resp = c.parallel_scan("t", "idx", ts.ScanQuery(ts.TermQuery("tag", "t1"), 3, token,
                                                            p, splits.splits_size, 30),
                                   splits.session_id,
                                   ts.ColumnsToGet(return_type=ts.ColumnReturnType.ALL_FROM_INDEX))
            seen += [pk[0][1] for pk, _ in resp.rows]
            assert all(len(cols) for _, cols in resp.rows)
            if not resp.next_token:
                break
            token = resp.next_token
    assert sorted(seen) == [i for i in range(N) if i % 4 == 1]
    assert service_error(c.parallel_scan, "t", "idx",
                         ts.ScanQuery(ts.MatchAllQuery(), 3, None, 0, 1, 30), "nope")[1] == \
        "OTSSessionExpired"


def test_errors_as_the_sdk_sees_them(served):
    srv, c = served
    assert service_error(c.search, "t", "nope", ts.SearchQuery(ts.MatchAllQuery())) == \
        (400, "OTSMetaNotMatch", "search index [nope] does not exist")
    assert service_error(c.describe_search_index, "t", "nope")[1] == "OTSMetaNotMatch"
    assert service_error(c.delete_search_index, "t", "nope")[1] == "OTSMetaNotMatch"
    assert service_error(c.search, "t", "idx", ts.SearchQuery(ts.TermQuery("zz", "x"))) == \
        (400, "OTSParameterInvalid", "Field zz is not in search index idx.")
    assert service_error(c.search, "t", "idx", ts.SearchQuery(
        ts.MatchAllQuery(), sort=ts.Sort([ts.FieldSort("body")])))[1] == "OTSParameterInvalid"
    assert service_error(c.search, "t", "idx", ts.SearchQuery(ts.MatchAllQuery(), limit=101),
                         ts.ColumnsToGet(return_type=ts.ColumnReturnType.ALL))[1] \
        == "OTSParameterInvalid"              # 100 when rows are read from the table
    assert service_error(c.search, "t", "idx", ts.SearchQuery(ts.MatchAllQuery(), limit=1001))[1] \
        == "OTSParameterInvalid"              # 1,000 from the index alone
    assert service_error(c.create_search_index, "t", "idx",
                         ts.SearchIndexMeta([ts.FieldSchema("n", ts.FieldType.LONG)]))[1] == \
        "OTSObjectAlreadyExist"
    assert service_error(c.create_search_index, "t", "bad", ts.SearchIndexMeta([
        ts.FieldSchema("b", ts.FieldType.TEXT, enable_sort_and_agg=True)]))[1] == \
        "OTSParameterInvalid"
    status, code, message = service_error(c.search, "t", "idx", ts.SearchQuery(
        ts.MatchAllQuery(), aggs=[ts.Sum("ok", name="m")]))
    assert (status, code, message) == (400, "OTSParameterInvalid", "[sum agg] field_name:ok "
                                       "type:boolean is invalid, allow [long, double]")


def test_what_the_engine_refuses_gets_its_error_through_the_wire(served):
    srv, c = served
    query = ts.SearchQuery(ts.PrefixQuery("n", "1"))
    with pytest.raises(Exception) as embedded:
        srv.service.client.search("t", "idx", query)
    assert service_error(c.search, "t", "idx", query) == \
        (embedded.value.http_status, embedded.value.code, embedded.value.message)
    assert embedded.value.code == "OTSParameterInvalid"


def test_bad_bytes_are_refused_not_crashed(served):
    srv, _ = served
    for query in (spb.Query(type=spb.TERM_QUERY, query=b"\xff\xff"),
                  spb.Query(type=spb.TERM_QUERY, query=spb.TermQuery(
                      field_name="n", term=b"\x09").SerializeToString()),
                  spb.Query(query=b"")):
        req = spb.SearchRequest(table_name="t", index_name="idx", search_query=spb.SearchQuery(
            query=query).SerializeToString())
        status, data = raw_post(srv, "Search", req.SerializeToString())
        assert status == 400 and error_of(data)[0] == "OTSParameterInvalid"
    deep = spb.Query(type=spb.MATCH_ALL_QUERY)
    for _ in range(100):
        deep = spb.Query(type=spb.BOOL_QUERY, query=spb.BoolQuery(
            must_queries=[deep]).SerializeToString())
    req = spb.SearchRequest(table_name="t", index_name="idx",
                            search_query=spb.SearchQuery(query=deep).SerializeToString())
    status, data = raw_post(srv, "Search", req.SerializeToString())
    assert status == 400 and "deeper" in error_of(data)[1]


def test_a_scan_query_without_parallel_numbers_is_one_stream():
    """The Go SDK's single-threaded ParallelScan sends neither
    current_parallel_id nor max_parallel: 0 of 1, as the service takes it."""
    from regions.otsserver import searchwire as sw
    q = sw.scan_query(spb.ScanQuery(limit=5).SerializeToString())
    assert (q.current_parallel_id, q.max_parallel, q.limit) == (0, 1, 5)


def test_inner_hits_cross_the_wire(tmp_path):
    nested = ts.FieldSchema("items", ts.FieldType.NESTED, sub_field_schemas=[
        ts.FieldSchema("tag", ts.FieldType.KEYWORD), ts.FieldSchema("n", ts.FieldType.LONG)])
    rows = [ts.Row([("id", i)], [("items", json.dumps(
        [{"tag": "red" if (i + k) % 2 else "blue", "n": k} for k in range(3)]))])
        for i in range(4)]
    srv, c = start_indexed(tmp_path / "data", [("id", "INTEGER")], [nested], rows)
    try:
        query = ts.SearchQuery(ts.NestedQuery(
            "items", ts.TermQuery("items.tag", "red"), ts.ScoreMode.NONE,
            ts.InnerHits(ts.Sort([ts.FieldSort("items.n", ts.SortOrder.DESC)]), 0, 5, None)))
        wire = c.search("t", "idx", query)
        embedded = srv.service.client.search("t", "idx", query)
        got = [[(ih.path, [x.nested_doc_offset for x in ih.search_hits])
                for ih in h.search_inner_hits] for h in wire.search_hits]
        assert got == [[(ih.path, [x.nested_doc_offset for x in ih.search_hits])
                        for ih in h.search_inner_hits] for h in embedded.search_hits]
        # rows 0 and 2: red at k=1; rows 1 and 3: red at k=0 and 2 (by n, descending)
        assert got == [[("items", [1])], [("items", [2, 0])], [("items", [1])],
                       [("items", [2, 0])]]
    finally:
        srv.stop()


def test_describe_sends_the_index_metering_info(served):
    """DescribeSearchIndex's metering_info (field 3, the Java and Go SDKs'
    MeteringInfo: storage size, row count, timestamp), which the Python
    SDK's proto does not name, is on the wire and decodes as theirs."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    srv, c = served
    file = descriptor_pb2.FileDescriptorProto(name="metering.proto", package="m")
    msg = file.message_type.add(name="MeteringInfo")
    for name, number in (("storage_size", 1), ("row_count", 2), ("reserved_read_cu", 3),
                         ("timestamp", 4)):
        msg.field.add(name=name, number=number, type=3, label=1)      # int64, optional
    outer = file.message_type.add(name="Describe")
    outer.field.add(name="metering_info", number=3, type=11, label=1, type_name=".m.MeteringInfo")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    Describe = message_factory.GetMessageClass(pool.FindMessageTypeByName("m.Describe"))
    resp = srv.service.describe_search_index(spb.DescribeSearchIndexRequest(
        table_name="t", index_name="idx").SerializeToString())
    info = Describe.FromString(resp.SerializeToString()).metering_info
    assert info.row_count == N and info.storage_size > 0 and info.timestamp > 1.7e9
    assert c.describe_search_index("t", "idx")[0].fields     # the Python SDK still decodes it


def test_a_suffix_query_the_python_sdk_cannot_name_is_served(served):
    """SUFFIX_QUERY (19: the Java and Go SDKs') arrives as a Query whose type
    the Python SDK's enum does not name (proto2 keeps it as an unknown
    field): it is read from the bytes and answered like a prefix reversed."""
    srv, _ = served
    inner = spb.PrefixQuery(field_name="tag", prefix="3").SerializeToString()
    query = bytes([0x08, 19, 0x12, len(inner)]) + inner          # Query{type: 19, query}
    search_query = spb.SearchQuery(limit=100, get_total_count=True)
    data = search_query.SerializeToString() + bytes([0x22, len(query)]) + query   # field 4
    resp = srv.service.search(spb.SearchRequest(
        table_name="t", index_name="idx", search_query=data).SerializeToString())
    assert resp.total_hits == sum(1 for i in range(N) if i % 4 == 3) == len(resp.rows)
    bad = bytes([0x08, 99, 0x12, len(inner)]) + inner
    with pytest.raises(Exception) as e:
        srv.service.search(spb.SearchRequest(table_name="t", index_name="idx", search_query=(
            search_query.SerializeToString() + bytes([0x22, len(bad)]) + bad)).SerializeToString())
    assert "Unknown query type: 99." in str(e.value)


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


@pytest.mark.parametrize("track, total", [
    (None, -1), (2 ** 31 - 1, N), (-1, -1), (0, -1), (5, 5)])
def test_the_java_sdk_s_track_total_count_asks_for_the_total(served, track, total):
    """The Java SDK asks for the total count with ``track_total_count``
    (field 13, int32: Integer.MAX_VALUE for setGetTotalCount(true), -1 for
    false), which the Python SDK's proto does not name: it is read from the
    bytes, and a positive value counts up to it."""
    srv, _ = served
    data = spb.SearchQuery(limit=3, query=spb.Query(
        type=spb.MATCH_ALL_QUERY, query=spb.MatchAllQuery().SerializeToString()),
    ).SerializeToString()
    if track is not None:
        data += bytes([13 << 3]) + _varint(track)
    resp = srv.service.search(spb.SearchRequest(
        table_name="t", index_name="idx", search_query=data).SerializeToString())
    assert resp.total_hits == total and len(resp.rows) == 3


def _field(number, kind, value):
    """One protobuf field, written by hand (independent of searchfunctions'
    declarations): kind 0 varint, 1 double, 2 bytes, 5 float."""
    import struct
    tag = _varint(number << 3 | kind)
    if kind == 0:
        return tag + _varint(value)
    if kind == 1:
        return tag + struct.pack("<d", value)
    if kind == 5:
        return tag + struct.pack("<f", value)
    return tag + _varint(len(value)) + value


def test_a_functions_score_query_the_python_sdk_cannot_name_is_served(served):
    """FUNCTIONS_SCORE_QUERY (18, the Java and Go SDKs'): its messages are not
    in the Python SDK's search.proto; read from the bytes as the Go SDK's
    search.proto lays them out, it scores as the embedded engine does."""
    from regions.tablestore.searchscore import (DecayFunction, FieldValueFactorFunction,
                                                FunctionsScoreQuery, ScoreFunction)
    srv, _ = served
    term = spb.TermQuery(field_name="tag", term=bytes((3,)) + (2).to_bytes(4, "little") + b"t1")
    t1 = spb.Query(type=spb.TERM_QUERY, query=term.SerializeToString()).SerializeToString()
    match_all = spb.Query(type=spb.MATCH_ALL_QUERY,
                          query=spb.MatchAllQuery().SerializeToString()).SerializeToString()
    fvf = _field(1, 2, b"n") + _field(2, 5, 0.5) + _field(3, 0, 6) + _field(4, 1, 1.0)  # LN1P
    numeric = _field(1, 1, 10.0) + _field(2, 1, 8.0) + _field(3, 1, 2.0)    # origin, scale, offset
    decay = (_field(1, 2, b"n") + _field(2, 0, 2) + _field(3, 0, 2) + _field(4, 2, numeric)
             + _field(5, 1, 0.25) + _field(6, 0, 2))                         # EXP, NUMERIC, MIN
    functions = (_field(2, 2, _field(1, 2, fvf) + _field(4, 5, 2.0))
                 + _field(2, 2, _field(3, 2, decay) + _field(5, 2, t1)))     # filtered: tag t1
    fsq = (_field(1, 2, match_all) + functions + _field(3, 0, 3)            # score_mode SUM
           + _field(4, 0, 4) + _field(6, 5, 100.0))                         # combine SUM, cap
    query = _field(1, 0, 18) + _field(2, 2, fsq)
    data = spb.SearchQuery(limit=100).SerializeToString() + _field(4, 2, query)
    resp = srv.service.search(spb.SearchRequest(
        table_name="t", index_name="idx", search_query=data).SerializeToString())
    got = [(h.score, r) for h, r in zip(resp.search_hits, resp.rows)]
    assert len(got) == N and all(h.HasField("score") for h in resp.search_hits)
    embedded = srv.service.client.search("t", "idx", ts.SearchQuery(FunctionsScoreQuery(
        ts.MatchAllQuery(), [
            ScoreFunction(field_value_factor=FieldValueFactorFunction("n", 0.5, "LN1P", 1.0),
                          weight=2.0),
            ScoreFunction(decay=DecayFunction("n", "EXP", "NUMERIC", 10.0, 8.0, 2.0, 0.25, "MIN"),
                          filter=ts.TermQuery("tag", "t1"))],
        score_mode="SUM", combine_mode="SUM", max_score=100.0), limit=100),
        ts.ColumnsToGet(return_type=ts.ColumnReturnType.NONE))
    want = [h.score for h in embedded.search_hits]
    assert [s for s, _ in got] == pytest.approx(want, rel=1e-6)
    assert want == sorted(want, reverse=True) and len(set(want)) > N // 2   # by score, spread
