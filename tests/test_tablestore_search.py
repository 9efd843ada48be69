"""Search indexes on the embedded client (regions/tablestore/search.py): the
index's lifecycle, its sync with the table (back-fill, writes, deletes, a
reopen, a crash between the feed and the engine's commit), and the first
query types, sorts, paging and columns, each checked against a brute-force
evaluation over the table's rows."""
import json

import pytest
from tablestore.metadata import (AnalyzerType, BoolQuery, ColumnReturnType, ColumnsToGet,
                                 ExistsQuery, FieldSchema, FieldSort, FieldType, KnnVectorQuery,
                                 MatchAllQuery, MatchPhraseQuery, MatchQuery, PrefixQuery, ScoreSort,
                                 PrimaryKeySort, QueryOperator, RangeQuery, SearchIndexMeta,
                                 SearchQuery, Sort, SortOrder, TermQuery, TermsQuery,
                                 VectorDataType, VectorMetricType, VectorOptions, WildcardQuery)

from regions.tablestore import (CapacityUnit, Condition, OTSClient, OTSServiceError,
                                ReservedThroughput, Row, TableMeta, TableOptions)
from regions.tablestore.search import SEARCH_INFIX

IGNORE = Condition("IGNORE")
WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape"]
FIELDS = [FieldSchema("tag", FieldType.KEYWORD, enable_sort_and_agg=True),
          FieldSchema("n", FieldType.LONG, enable_sort_and_agg=True),
          FieldSchema("x", FieldType.DOUBLE, enable_sort_and_agg=True),
          FieldSchema("ok", FieldType.BOOLEAN),
          FieldSchema("body", FieldType.TEXT, analyzer=AnalyzerType.SINGLEWORD),
          FieldSchema("tags", FieldType.KEYWORD, is_array=True),
          FieldSchema("vec", FieldType.VECTOR, vector_options=VectorOptions(
              VectorDataType.VD_FLOAT_32, VectorMetricType.VM_EUCLIDEAN, 3))]


def row(i):
    return {"tag": "t%d" % (i % 4), "n": i, "x": i / 2.0, "ok": i % 2 == 0,
            "body": " ".join(WORDS[(i + k) % len(WORDS)] for k in range(3)) + " Pie",
            "tags": json.dumps(["a%d" % (i % 3), "b%d" % (i % 5)]),
            "vec": json.dumps([float(i % 7), 1.0, float(i % 3)])}


def put(client, i, **override):
    cols = dict(row(i), **override)
    client.put_row("t", Row([("id", i)], [(k, v) for k, v in cols.items() if v is not None]),
                   IGNORE)


@pytest.fixture
def client():
    c = OTSClient(None)
    c.create_table(TableMeta("t", [("id", "INTEGER")]), TableOptions(),
                   ReservedThroughput(CapacityUnit(0, 0)))
    yield c
    c.close()


def index(client, n=40):
    for i in range(n):
        put(client, i)
    client.create_search_index("t", "idx", SearchIndexMeta(list(FIELDS)))
    assert client.wait_for_search_index("t", "idx")


def ids(client, query, sort=None, limit=100, offset=0, **kw):
    resp = client.search("t", "idx", SearchQuery(query, sort=sort, limit=limit, offset=offset,
                                                 get_total_count=True, **kw),
                         ColumnsToGet(return_type=ColumnReturnType.NONE))
    return [r[0][0][1] for r in resp.rows], resp.total_count


def rows(client):
    _, _, found, _ = client.get_range("t", "FORWARD", [("id", -1)], [("id", 10 ** 9)])
    return {r.primary_key[0][1]: {c[0]: c[1] for c in r.attribute_columns} for r in found}


def brute(client, predicate):
    return sorted(i for i, cols in rows(client).items() if predicate(cols))


@pytest.mark.parametrize("query, predicate", [
    (MatchAllQuery(), lambda c: True),
    (TermQuery("tag", "t1"), lambda c: c.get("tag") == "t1"),
    (TermsQuery("tag", ["t1", "t3"]), lambda c: c.get("tag") in ("t1", "t3")),
    (TermQuery("n", 7), lambda c: c.get("n") == 7),
    (TermQuery("ok", True), lambda c: c.get("ok") is True),
    (RangeQuery("n", 5, 12), lambda c: 5 <= c.get("n", -1) < 12),
    (RangeQuery("n", 5, 12, include_lower=False, include_upper=True),
     lambda c: 5 < c.get("n", -1) <= 12),
    (RangeQuery("x", range_from=10.0), lambda c: c.get("x", -1) >= 10.0),
    (RangeQuery("tag", "t1", "t3"), lambda c: "t1" <= c.get("tag", "") < "t3"),
    (PrefixQuery("tag", "t"), lambda c: "tag" in c),
    (WildcardQuery("tag", "t?"), lambda c: "tag" in c),
    (WildcardQuery("tag", "*2"), lambda c: c.get("tag", "").endswith("2")),
    (TermQuery("tags", "b3"), lambda c: "b3" in json.loads(c.get("tags", "[]"))),
    (MatchQuery("body", "apple fig"), lambda c: {"apple", "fig"} & set(c["body"].split())),
    (MatchQuery("body", "apple fig", operator=QueryOperator.AND),
     lambda c: {"apple", "fig"} <= set(c["body"].split())),
    (MatchQuery("body", "PIE"), lambda c: "Pie" in c["body"]),
    (MatchPhraseQuery("body", "banana cherry"), lambda c: "banana cherry" in c["body"]),
    (ExistsQuery("x"), lambda c: "x" in c),
    (BoolQuery(must_queries=[RangeQuery("n", 0, 30)], must_not_queries=[TermQuery("tag", "t0")],
               filter_queries=[TermQuery("ok", True)]),
     lambda c: 0 <= c["n"] < 30 and c["tag"] != "t0" and c["ok"]),
    (BoolQuery(should_queries=[TermQuery("tag", "t1"), TermQuery("n", 2), RangeQuery("n", 0, 3)],
               minimum_should_match=2),
     lambda c: sum([c["tag"] == "t1", c["n"] == 2, 0 <= c["n"] < 3]) >= 2),
    (BoolQuery(must_not_queries=[TermQuery("tag", "t2")]), lambda c: c.get("tag") != "t2"),
])
def test_each_query_matches_what_a_scan_of_the_table_finds(client, query, predicate):
    index(client)
    put(client, 100, x=None)                      # a row without x: ExistsQuery leaves it out
    client.delete_row("t", Row([("id", 3)]), IGNORE)
    assert client.wait_for_search_index("t", "idx")
    found, total = ids(client, query)
    expected = brute(client, predicate)
    assert sorted(found) == expected and total == len(expected)


def test_sorts_paging_and_tokens(client):
    index(client)
    found, _ = ids(client, MatchAllQuery(), Sort([FieldSort("tag", SortOrder.DESC),
                                                  PrimaryKeySort(SortOrder.ASC)]))
    expected = sorted(range(40), key=lambda i: (-(i % 4), i))
    assert found == expected
    found, _ = ids(client, RangeQuery("n", 10, 20), Sort([FieldSort("x", SortOrder.DESC)]))
    assert found == list(range(19, 9, -1))
    # offset/limit, then next_token to the end
    page, _ = ids(client, MatchAllQuery(), limit=7, offset=7)
    assert page == list(range(7, 14))
    seen, token = [], None
    while True:
        resp = client.search("t", "idx", SearchQuery(MatchAllQuery(), limit=9, next_token=token),
                             ColumnsToGet(return_type=ColumnReturnType.NONE))
        seen += [r[0][0][1] for r in resp.rows]
        token = resp.next_token
        if not token:
            break
    assert seen == list(range(40))
    with pytest.raises(OTSServiceError):           # TEXT fields do not sort
        ids(client, MatchAllQuery(), Sort([FieldSort("body")]))


def test_columns_to_get(client):
    index(client, 5)
    get = lambda kind, names=None: client.search(  # noqa: E731
        "t", "idx", SearchQuery(TermQuery("n", 2)), ColumnsToGet(names, kind)).rows[0]
    assert get(ColumnReturnType.NONE) == ([("id", 2)], [])
    assert [c[0] for c in get(ColumnReturnType.SPECIFIED, ["n", "tag"])[1]] == ["n", "tag"]
    assert sorted(c[0] for c in get(ColumnReturnType.ALL)[1]) == sorted(row(2))
    assert sorted(c[0] for c in get(ColumnReturnType.ALL_FROM_INDEX)[1]) == \
        sorted(f.field_name for f in FIELDS)


def test_knn_returns_the_nearest_by_the_metric_and_honours_its_filter(client):
    index(client)
    q = [2.0, 1.0, 1.0]
    resp = client.search("t", "idx", SearchQuery(KnnVectorQuery("vec", 5, q), limit=5,
                                                 sort=Sort([ScoreSort()])),
                         ColumnsToGet(return_type=ColumnReturnType.NONE))
    got = [(h.row[0][0][1], h.score) for h in resp.search_hits]
    dist = {i: sum((a - b) ** 2 for a, b in zip(json.loads(c["vec"]), q))
            for i, c in rows(client).items()}
    best = sorted(dist.values())[:5]
    assert sorted(dist[i] for i, _ in got) == best
    assert all(abs(s - 1 / (1 + dist[i])) < 1e-6 for i, s in got)
    # not sorted by score: no score (NaN, as the service's: the vector stores read None)
    resp = client.search("t", "idx", SearchQuery(KnnVectorQuery("vec", 5, q), limit=5))
    assert all(h.score != h.score for h in resp.search_hits)
    resp = client.search("t", "idx", SearchQuery(
        KnnVectorQuery("vec", 5, q, filter=TermQuery("tag", "t3")), limit=5),
        ColumnsToGet(return_type=ColumnReturnType.NONE))
    assert all(r[0][0][1] % 4 == 3 for r in resp.rows) and len(resp.rows) == 5


def test_the_index_follows_writes_updates_and_deletes(client):
    index(client, 10)
    client.update_row("t", Row([("id", 1)], {"put": [("tag", "new")]}), IGNORE)
    client.delete_row("t", Row([("id", 2)]), IGNORE)
    put(client, 50)
    assert client.wait_for_search_index("t", "idx")
    assert ids(client, TermQuery("tag", "new"))[0] == [1]
    assert 2 not in ids(client, MatchAllQuery())[0] and 50 in ids(client, MatchAllQuery())[0]


def test_lifecycle_errors_and_describe(client):
    index(client, 3)
    assert client.list_search_index() == [("t", "idx")]
    meta, stat = client.describe_search_index("t", "idx")
    assert [f.field_name for f in meta.fields] == [f.field_name for f in FIELDS]
    assert int(stat.sync_phase) == 1                       # INCR once loaded
    for call, code in ((lambda: client.create_search_index("t", "idx", SearchIndexMeta(FIELDS)),
                        "OTSObjectAlreadyExist"),
                       (lambda: client.search("t", "nope", SearchQuery(MatchAllQuery())),
                        "OTSMetaNotMatch"),
                       (lambda: ids(client, TermQuery("missing", 1)), "OTSParameterInvalid"),
                       (lambda: ids(client, MatchAllQuery(), limit=1001), "OTSParameterInvalid"),
                       (lambda: client.create_search_index("t", "bad", SearchIndexMeta(
                           [FieldSchema("b", FieldType.TEXT, enable_sort_and_agg=True)])),
                        "OTSParameterInvalid")):
        with pytest.raises(OTSServiceError) as e:
            call()
        assert e.value.code == code
    assert client.list_search_index() == [("t", "idx")]
    client.delete_search_index("t", "idx")
    assert client.list_search_index() == []
    assert not any(SEARCH_INFIX in n for n in client._server.list_tables())


def test_the_index_survives_a_reopen_and_a_crash_before_its_commit(tmp_path):
    c = OTSClient(str(tmp_path))
    c.create_table(TableMeta("t", [("id", "INTEGER")]), TableOptions(),
                   ReservedThroughput(CapacityUnit(0, 0)))
    index(c, 10)
    engine = c._indexer.tables["t"].searches["idx"]

    def killed():                                      # the maintainer dies at its commit
        raise RuntimeError("killed")
    engine.commit = killed
    put(c, 77)
    assert not c._indexer.wait("t", 0.3)               # its feed entry stays: never forgotten
    engine._writer.rollback()                          # what a kill loses: the staged document
    c.close()
    c = OTSClient(str(tmp_path))
    try:
        assert c.wait_for_search_index("t", "idx")
        assert sorted(ids(c, MatchAllQuery())[0]) == list(range(10)) + [77]
        c.delete_table("t")
        assert not (tmp_path / "search" / "t" / "idx").exists()
    finally:
        c.close()


def scan_all(client, parallel, max_parallel, session, limit=7, query=None):
    from tablestore.metadata import ScanQuery
    out, token = [], None
    while True:
        resp = client.parallel_scan("t", "idx", ScanQuery(query or MatchAllQuery(), limit, token,
                                                          parallel, max_parallel, 30), session,
                                    ColumnsToGet(return_type=ColumnReturnType.ALL_FROM_INDEX))
        out += [r[0][0][1] for r in resp.rows]
        if not resp.next_token:
            return out
        token = resp.next_token


def test_parallel_scan_streams_hold_every_row_exactly_once(client):
    server = client._server
    index(client, 60)
    (region,) = server.regions("t")
    from regions.tablestore import pkcodec
    server.split_region("t", region.region_id, pkcodec.encode_pk(["INTEGER"], [30]) + b"\x00")
    splits = client.compute_splits("t", "idx")
    assert splits.splits_size == 2 and splits.session_id
    streams = [scan_all(client, p, 2, splits.session_id) for p in range(2)]
    assert sorted(streams[0] + streams[1]) == list(range(60))
    assert streams[0] and streams[1] and not set(streams[0]) & set(streams[1])
    assert sorted(scan_all(client, 0, 1, splits.session_id, query=TermQuery("tag", "t1"))) == \
        [i for i in range(60) if i % 4 == 1]


def test_parallel_scan_errors(client):
    from tablestore.metadata import ScanQuery
    index(client, 5)
    splits = client.compute_splits("t", "idx")
    scan = lambda p, m, session=splits.session_id: client.parallel_scan(  # noqa: E731
        "t", "idx", ScanQuery(MatchAllQuery(), 10, None, p, m, 30), session)
    for args, code, text in (((101, 1), "OTSParameterInvalid", "current_parallel_id is 101"),
                             ((0, 2), "OTSParameterInvalid", "current max_parallel_id is 2"),
                             ((0, 1, "nope"), "OTSSessionExpired", "session is expired")):
        with pytest.raises(OTSServiceError) as e:
            scan(*args)
        assert e.value.code == code and text in e.value.message
    with pytest.raises(OTSServiceError) as e:
        client.compute_splits("t", "not_exist")
    assert (e.value.code, e.value.message) == ("OTSMetaNotMatch",
                                               "search index [not_exist] does not exist")
    client._scans._clock = lambda: 10 ** 12           # past every session's alive time
    with pytest.raises(OTSServiceError) as e:
        scan(0, 1)
    assert e.value.code == "OTSSessionExpired"


def test_geo_dismax_function_score_collapse_and_ttl(client):
    from tablestore.metadata import (Collapse, DisMaxQuery, FieldValueFactor, FunctionScoreQuery,
                                     GeoBoundingBoxQuery, GeoDistanceQuery, GeoPolygonQuery,
                                     ScoreSort)
    for i in range(30):
        client.put_row("t", Row([("id", i)], [("g", "%f,%f" % (30 + 0.01 * i, 120.0)),
                                              ("n", i), ("tag", "t%d" % (i % 3))]), IGNORE)
    client.create_search_index("t", "idx", SearchIndexMeta([
        FieldSchema("g", FieldType.GEOPOINT), FieldSchema("n", FieldType.LONG),
        FieldSchema("tag", FieldType.KEYWORD)]))
    assert client.wait_for_search_index("t", "idx")
    # 0.01 degree of latitude is ~1,112 m
    assert sorted(ids(client, GeoDistanceQuery("g", "30.0,120.0", 3000))[0]) == [0, 1, 2]
    assert sorted(ids(client, GeoBoundingBoxQuery("g", "30.105,119.9", "30.085,120.1"))[0]) == \
        [9, 10]
    assert sorted(ids(client, GeoPolygonQuery("g", ["30.195,119.0", "30.195,121.0",
                                                    "30.215,120.0"]))[0]) == [20, 21]
    found, _ = ids(client, DisMaxQuery([TermQuery("tag", "t1"), TermQuery("n", 0)]))
    assert sorted(found) == sorted([0] + [i for i in range(30) if i % 3 == 1])
    found, _ = ids(client, FunctionScoreQuery(RangeQuery("n", 5, 9), FieldValueFactor("n")),
                   Sort([ScoreSort()]))
    assert found == [8, 7, 6, 5]
    resp = client.search("t", "idx", SearchQuery(MatchAllQuery(), limit=100,
                                                 collapse_field=Collapse("tag")),
                         ColumnsToGet(return_type=ColumnReturnType.NONE))
    assert [r[0][0][1] for r in resp.rows] == [0, 1, 2]
    # the index's TTL: rows whose newest cell is older are not found
    client.update_search_index("t", "idx", SearchIndexMeta([], time_to_live=86400))
    client.update_table("t", TableOptions(max_time_deviation=10 * 86400))
    old = int(__import__("time").time() * 1000) - 2 * 86400 * 1000
    client.put_row("t", Row([("id", 99)], [("n", 99, old)]), IGNORE)
    assert client.wait_for_search_index("t", "idx")
    assert 99 not in ids(client, MatchAllQuery())[0]


@pytest.mark.parametrize("analyzer, params, text, query, hit", [
    (AnalyzerType.SINGLEWORD, None, "Hang Zhou", "hang", True),
    (AnalyzerType.SINGLEWORD, None, "表格存储", "格", True),
    ("single_word", {"case_sensitive": True}, "Hang Zhou", "hang", False),
    ("single_word", {"delimit_word": True}, "iPhone6", "6", True),
    ("single_word", None, "iPhone6", "6", False),
    (AnalyzerType.MAXWORD, None, "菊花茶很好喝", "花茶", True),
    (AnalyzerType.MINWORD, None, "菊花茶很好喝", "花茶", False),
    (AnalyzerType.MINWORD, None, "菊花茶很好喝", "菊花茶", True),
    (AnalyzerType.SPLIT, {"delimiter": ","}, "a b,c", "a b", True),
    (AnalyzerType.SPLIT, {"delimiter": ","}, "a b,c", "a", False),
    (AnalyzerType.FUZZY, {"min_chars": 2, "max_chars": 3}, "Tablestore", "abl", True),
])
def test_analyzers_tokenize_as_the_service_describes(client, analyzer, params, text, query, hit):
    from tablestore.metadata import (FuzzyAnalyzerParameter, SingleWordAnalyzerParameter,
                                     SplitAnalyzerParameter)
    kinds = {"single_word": SingleWordAnalyzerParameter, "split": SplitAnalyzerParameter,
             "fuzzy": FuzzyAnalyzerParameter}
    parameter = kinds[analyzer](**params) if params else None
    client.put_row("t", Row([("id", 1)], [("s", text)]), IGNORE)
    client.create_search_index("t", "idx", SearchIndexMeta([FieldSchema(
        "s", FieldType.TEXT, analyzer=analyzer, analyzer_parameter=parameter)]))
    assert client.wait_for_search_index("t", "idx")
    assert ids(client, MatchPhraseQuery("s", query))[0] == ([1] if hit else [])


def test_highlight_wraps_the_query_words_in_the_field_as_written(client):
    from tablestore.metadata import Highlight, HighlightParameter
    client.put_row("t", Row([("id", 1)], [("title", "菊花茶是一款大部分人都适合的经典花茶"),
                                          ("plain", "x")]), IGNORE)
    client.put_row("t", Row([("id", 2)], [("title", "The Quick brown fox")]), IGNORE)
    client.put_row("t", Row([("id", 3)], [("title", "dengcai <em>street</em>")]), IGNORE)
    client.create_search_index("t", "idx", SearchIndexMeta([
        FieldSchema("title", FieldType.TEXT, analyzer=AnalyzerType.MAXWORD,
                    enable_highlighting=True),
        FieldSchema("plain", FieldType.TEXT)]))
    assert client.wait_for_search_index("t", "idx")

    def fragments(query, field="title", size=18, encoder=None):
        resp = client.search("t", "idx", SearchQuery(query, highlight=Highlight(
            [HighlightParameter(field, 1, size, "<b>", "</b>")], encoder)))
        return [[f.field_fragments for f in h.highlight_result.highlight_fields]
                for h in resp.search_hits]
    assert fragments(MatchQuery("title", "花茶")) == [[["菊<b>花茶</b>是一款大部分人都适合的经典<b>花茶</b>"]]]
    assert fragments(MatchQuery("title", "quick"), size=40) == [[["The <b>Quick</b> brown fox"]]]
    # HTML_MODE: the text around the tags HTML-escaped (the Go SDK's live test)
    from tablestore.metadata import HighlightEncoder
    assert fragments(MatchQuery("title", "dengcai"), size=40,
                     encoder=HighlightEncoder.HTML_MODE) == \
        [[["<b>dengcai</b> &lt;em&gt;street&lt;&#x2F;em&gt;"]]]
    with pytest.raises(OTSServiceError) as e:
        fragments(MatchQuery("plain", "x"), "plain")
    assert e.value.message == "highlighting is not supported for field[plain]"
    meta, _ = client.describe_search_index("t", "idx")
    assert [f.enable_highlighting for f in meta.fields] == [True, False]


def test_nested_fields_and_dates(client):
    from tablestore.metadata import NestedQuery
    for i in range(20):
        client.put_row("t", Row([("id", i)], [
            ("n", json.dumps([{"nk": "key%03d" % i, "nl": i}, {"nk": "other", "nl": 100 + i}])),
            ("day", "2024-01-%02d" % (i + 1)), ("ms", 1704067200000 + i * 86400000)]), IGNORE)
    client.create_search_index("t", "idx", SearchIndexMeta([
        FieldSchema("n", FieldType.NESTED, sub_field_schemas=[
            FieldSchema("nk", FieldType.KEYWORD), FieldSchema("nl", FieldType.LONG)]),
        FieldSchema("day", FieldType.DATE, date_formats=["yyyy-MM-dd"]),
        FieldSchema("ms", FieldType.DATE)]))
    assert client.wait_for_search_index("t", "idx")
    assert ids(client, NestedQuery("n", TermQuery("n.nk", "key007")))[0] == [7]
    assert len(ids(client, NestedQuery("n", TermQuery("n.nk", "other")))[0]) == 20
    assert ids(client, NestedQuery("n", RangeQuery("n.nl", 105, 108)))[0] == [5, 6, 7]
    assert ids(client, RangeQuery("day", "2024-01-03", "2024-01-05"))[0] == [2, 3]
    assert ids(client, RangeQuery("ms", 1704067200000 + 18 * 86400000))[0] == [18, 19]
    meta, _ = client.describe_search_index("t", "idx")
    assert [s.field_name for s in meta.fields[0].sub_field_schemas] == ["nk", "nl"]


def test_the_index_sort_orders_by_default_and_describe_tells_what_was_asked(client):
    from tablestore.metadata import (GeoDistanceSort, IndexSetting, SingleWordAnalyzerParameter)
    for i in range(6):
        client.put_row("t", Row([("id", i)], [("l", i * 10), ("g", "30.0,%f" % (120 + i * 0.01)),
                                              ("s", "x")]), IGNORE)
    client.create_search_index("t", "idx", SearchIndexMeta(
        [FieldSchema("l", FieldType.LONG), FieldSchema("g", FieldType.GEOPOINT),
         FieldSchema("s", FieldType.TEXT, analyzer_parameter=SingleWordAnalyzerParameter(
             case_sensitive=True))],
        index_setting=IndexSetting(["id"]), index_sort=Sort([PrimaryKeySort(SortOrder.DESC)])))
    assert client.wait_for_search_index("t", "idx")
    assert ids(client, MatchAllQuery())[0] == [5, 4, 3, 2, 1, 0]      # the index's sort
    assert ids(client, TermQuery("l", "30"))[0] == [3]                  # a string on a LONG
    assert ids(client, RangeQuery("l", None, 20.0, include_upper=True))[0] == [2, 1, 0]  # 2.0
    with pytest.raises(OTSServiceError, match="does not fit field l of type LONG"):
        ids(client, RangeQuery("l", None, 20.5))                        # not a whole number
    assert ids(client, MatchAllQuery(), Sort([FieldSort("l", SortOrder.ASC)]))[0] == \
        [0, 1, 2, 3, 4, 5]                                              # sortable without asking
    assert ids(client, MatchAllQuery(), Sort([GeoDistanceSort("g", ["30.0,120.031"])]))[0][:3] == \
        [3, 4, 2]
    meta, stat = client.describe_search_index("t", "idx")
    assert [f.enable_sort_and_agg for f in meta.fields] == [False, False, False]
    assert meta.index_setting.routing_fields == ["id"]
    assert [int(s.sort_order) for s in meta.index_sort.sorters] == [1]
    assert meta.fields[2].analyzer_parameter.case_sensitive is True
    assert stat.current_sync_timestamp > 10 ** 18                      # ns


@pytest.mark.parametrize("metric", [VectorMetricType.VM_EUCLIDEAN, VectorMetricType.VM_COSINE,
                                    VectorMetricType.VM_DOT_PRODUCT])
def test_knn_through_the_hnsw_index_finds_what_exact_search_finds(client, monkeypatch, metric):
    """Above EXACT_MAX rows a KNN goes through usearch's HNSW (kept in step
    by puts and deletes); its answers and scores against exact search."""
    import numpy as np
    from regions.tablestore import search
    monkeypatch.setattr(search, "EXACT_MAX", 50)
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((300, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)         # dot product needs unit vectors
    for i, v in enumerate(vecs):
        client.put_row("t", Row([("id", i)], [("v", json.dumps([float(x) for x in v])),
                                              ("tag", "t%d" % (i % 3))]), IGNORE)
    client.create_search_index("t", "idx", SearchIndexMeta([
        FieldSchema("v", FieldType.VECTOR, vector_options=VectorOptions(
            VectorDataType.VD_FLOAT_32, metric, 8)), FieldSchema("tag", FieldType.KEYWORD)]))
    assert client.wait_for_search_index("t", "idx")
    client.delete_row("t", Row([("id", 0)]), IGNORE)             # gone from the HNSW too
    assert client.wait_for_search_index("t", "idx")
    store = client._indexer.tables["t"].searches["idx"]._vectors["v"]
    assert store._hnsw is not None and 0 not in [store.keys[i] for i in store.keys]
    found = 0
    for q in vecs[:20] + 0.01:
        resp = client.search("t", "idx", SearchQuery(KnnVectorQuery(
            "v", 5, [float(x) for x in q]), limit=5, sort=Sort([ScoreSort()])),
            ColumnsToGet(return_type=ColumnReturnType.NONE))
        got = [(h.row[0][0][1], h.score) for h in resp.search_hits]
        live = np.arange(1, 300)
        if metric == VectorMetricType.VM_EUCLIDEAN:
            score = 1 / (1 + ((vecs[live] - q) ** 2).sum(1))
        else:
            dot = vecs[live] @ q
            score = (1 + (dot / np.linalg.norm(q) if metric == VectorMetricType.VM_COSINE
                          else dot)) / 2
        best = live[np.argsort(-score)[:5]]
        # an approximate graph: the true neighbours found (recall below), each
        # returned row scored as exact search scores it, best first
        assert len(got) == 5 and 0 not in [k for k, _ in got]
        found += len({k for k, _ in got} & set(best.tolist()))
        for k, s in got:
            assert abs(s - score[k - 1]) < 1e-4
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    assert found >= 0.9 * 20 * 5            # recall@5 over the 20 queries
    resp = client.search("t", "idx", SearchQuery(KnnVectorQuery(
        "v", 5, [float(x) for x in vecs[1]], filter=TermQuery("tag", "t2")), limit=5),
        ColumnsToGet(return_type=ColumnReturnType.NONE))
    assert len(resp.rows) == 5 and all(r[0][0][1] % 3 == 2 for r in resp.rows)


def test_hybrid_bool_of_text_and_knn_limit_for_index_only_rows_and_fuzzy_phrases(client):
    """What the vector-store libraries ask: a Bool whose should holds a Match
    and a KnnVectorQuery (their hybrid mode: the vector clause adds its top
    rows with their similarity), a limit up to 1,000 when the rows come from
    the index alone, and MatchPhrase on a fuzzy field as a substring search."""
    from tablestore.metadata import FuzzyAnalyzerParameter
    for i in range(12):
        client.put_row("t", Row([("id", i)], [
            ("text", "red apple" if i < 3 else "green leaf"),
            ("v", json.dumps([float(i), 0.0])),
            ("title", ["abc", "xabcdefy", "bcd", "ABCDEF", "zz"][i % 5])]), IGNORE)
    client.create_search_index("t", "idx", SearchIndexMeta([
        FieldSchema("text", FieldType.TEXT),
        FieldSchema("v", FieldType.VECTOR, vector_options=VectorOptions(
            VectorDataType.VD_FLOAT_32, VectorMetricType.VM_EUCLIDEAN, 2)),
        FieldSchema("title", FieldType.TEXT, analyzer=AnalyzerType.FUZZY,
                    analyzer_parameter=FuzzyAnalyzerParameter(1, 4))]))
    assert client.wait_for_search_index("t", "idx")
    hybrid = BoolQuery(should_queries=[MatchQuery("text", "apple"),
                                       KnnVectorQuery("v", 2, [10.0, 0.0])],
                       minimum_should_match=1)
    resp = client.search("t", "idx", SearchQuery(hybrid, limit=10, sort=Sort([ScoreSort()])),
                         ColumnsToGet(return_type=ColumnReturnType.NONE))
    scores = {h.row[0][0][1]: h.score for h in resp.search_hits}
    assert sorted(scores) == [0, 1, 2, 9, 10]
    assert (scores[10], scores[9]) == (1.0, 0.5)        # their similarity: 1 / (1 + d²)
    for limit, kind, ok in ((1000, ColumnReturnType.NONE, True),
                            (1000, ColumnReturnType.ALL, False), (100, ColumnReturnType.ALL, True)):
        if ok:
            client.search("t", "idx", SearchQuery(MatchAllQuery(), limit=limit),
                          ColumnsToGet(return_type=kind))
        else:
            with pytest.raises(OTSServiceError):
                client.search("t", "idx", SearchQuery(MatchAllQuery(), limit=limit),
                              ColumnsToGet(return_type=kind))
    for text, expected in (("bc", [0, 1, 2, 3, 5, 6, 7, 8, 10, 11]), ("ab", [0, 1, 3, 5, 6, 8, 10, 11]),
                           ("abcde", [1, 3, 6, 8, 11]), ("BCD", [1, 2, 3, 6, 7, 8, 11])):
        got = sorted(ids(client, MatchPhraseQuery("title", text))[0])
        assert got == expected, text


@pytest.mark.parametrize("desc", [False, True], ids=["asc", "desc"])
def test_pages_by_primary_key_read_only_their_rows_and_keep_the_key_order(desc, monkeypatch):
    """A search sorted by primary key takes tantivy's top k by the key's
    first bytes (_pko); keys sharing them ("user_000..." here: groups of
    hundreds) are ordered by their whole key.  Every page, offset and token
    agrees with the rows sorted in Python."""
    c = OTSClient(None)
    try:
        c.create_table(TableMeta("u", [("name", "STRING"), ("n", "INTEGER")]), TableOptions(),
                       ReservedThroughput(CapacityUnit(0, 0)))
        keys = [("user_%06d" % (i * 7 % 900), i % 3) for i in range(600)]
        for name, n in keys:
            c.put_row("u", Row([("name", name), ("n", n)], [("tag", "t%d" % (n % 2))]), IGNORE)
        c.create_search_index("u", "idx", SearchIndexMeta([FieldSchema("tag", FieldType.KEYWORD)]))
        assert c.wait_for_search_index("u", "idx")
        order = PrimaryKeySort(SortOrder.DESC if desc else SortOrder.ASC)
        want = sorted((k for k in keys if k[1] % 2 == 0), reverse=desc)
        from regions.tablestore.search import Engine
        every_row = []                     # calls of the path that reads every matching row
        read_all = Engine._hits
        monkeypatch.setattr(Engine, "_hits", lambda *a: every_row.append(1) or read_all(*a))
        for offset, limit in ((0, 7), (95, 100), (250, 13), (len(want) - 3, 10)):
            r = c.search("u", "idx", SearchQuery(TermQuery("tag", "t0"), sort=Sort([order]),
                                                 offset=offset, limit=limit,
                                                 get_total_count=True),
                         ColumnsToGet(return_type=ColumnReturnType.NONE))
            got = [(row[0][0][1], row[0][1][1]) for row in r.rows]
            assert got == want[offset:offset + limit] and r.total_count == len(want)
        seen, token = [], None
        while True:                        # the index's own sort (key ascending), by token
            r = c.search("u", "idx", SearchQuery(TermQuery("tag", "t0"), limit=64,
                                                 next_token=token),
                         ColumnsToGet(return_type=ColumnReturnType.NONE))
            seen += [(row[0][0][1], row[0][1][1]) for row in r.rows]
            token = r.next_token
            if not token:
                break
        assert seen == sorted(want) and not every_row
        # scores that tie (a term's): every row with the k-th score is read, in key order
        r = c.search("u", "idx", SearchQuery(TermQuery("tag", "t0"), sort=Sort([ScoreSort()]),
                                             limit=5), ColumnsToGet(return_type=ColumnReturnType.NONE))
        assert [(row[0][0][1], row[0][1][1]) for row in r.rows] == sorted(want)[:5]
        assert not every_row
    finally:
        c.close()


@pytest.mark.parametrize("desc", [False, True], ids=["asc", "desc"])
def test_pages_by_a_field_read_only_their_rows(desc, monkeypatch):
    """A FieldSort on a single-valued number takes tantivy's top k by the
    field's column: ties in the value go by primary key, rows without the
    field come last (by key) in either order; as the rows sorted in Python."""
    from regions.tablestore.search import Engine
    c = OTSClient(None)
    try:
        c.create_table(TableMeta("f", [("id", "INTEGER")]), TableOptions(),
                       ReservedThroughput(CapacityUnit(0, 0)))
        value = {i: (i * 37 % 50) / 2 for i in range(300) if i % 9}     # ties; some rows lack it
        for i in range(300):
            c.put_row("f", Row([("id", i)], [("k", "a")] + ([("x", value[i])] if i in value
                                                            else [])), IGNORE)
        c.create_search_index("f", "idx", SearchIndexMeta([
            FieldSchema("x", FieldType.DOUBLE, enable_sort_and_agg=True),
            FieldSchema("k", FieldType.KEYWORD)]))
        assert c.wait_for_search_index("f", "idx")
        every_row = []
        read_all = Engine._hits
        monkeypatch.setattr(Engine, "_hits", lambda *a: every_row.append(1) or read_all(*a))
        with_x = sorted(value, key=lambda i: (-value[i] if desc else value[i], i))
        want = with_x + sorted(i for i in range(300) if i not in value)
        order = SortOrder.DESC if desc else SortOrder.ASC
        for offset, limit in ((0, 10), (37, 50), (260, 40), (290, 20)):
            r = c.search("f", "idx", SearchQuery(TermQuery("k", "a"), sort=Sort(
                [FieldSort("x", order)]), offset=offset, limit=limit, get_total_count=True),
                ColumnsToGet(return_type=ColumnReturnType.NONE))
            assert [row[0][0][1] for row in r.rows] == want[offset:offset + limit]
            assert r.total_count == 300
        assert not every_row
    finally:
        c.close()


def test_inner_hits_name_the_nested_objects_that_matched(client):
    """NestedQuery with InnerHits: each hit carries, for the nested path, the
    objects its inner query matched, with their offsets in the row's array,
    paged and sorted as asked, and highlighted."""
    from tablestore.metadata import (Highlight, HighlightParameter, InnerHits, NestedQuery,
                                     ScoreMode)
    docs = {1: [{"tag": "red", "n": 1, "t": "red apple"}, {"tag": "blue", "n": 2, "t": "sky"},
                {"tag": "red", "n": 3, "t": "red car"}],
            2: [{"tag": "green", "n": 4, "t": "grass"}],
            3: [{"tag": "red", "n": 5, "t": "red red rose"}]}
    for i, objects in docs.items():
        client.put_row("t", Row([("id", i)], [("items", json.dumps(objects))]), IGNORE)
    client.create_search_index("t", "idx", SearchIndexMeta([FieldSchema(
        "items", FieldType.NESTED, sub_field_schemas=[
            FieldSchema("tag", FieldType.KEYWORD), FieldSchema("n", FieldType.LONG),
            FieldSchema("t", FieldType.TEXT, enable_highlighting=True)])]))
    assert client.wait_for_search_index("t", "idx")

    def search(inner):
        resp = client.search("t", "idx", SearchQuery(NestedQuery(
            "items", TermQuery("items.tag", "red"), ScoreMode.NONE, inner)))
        return {h.row[0][0][1]: [(x.nested_doc_offset, x.highlight_result)
                                 for ih in h.search_inner_hits for x in ih.search_hits]
                for h in resp.search_hits}
    got = search(InnerHits(Sort([FieldSort("items.n", SortOrder.DESC)]), 0, 10, None))
    assert {k: [o for o, _ in v] for k, v in got.items()} == {1: [2, 0], 3: [0]}
    assert {k: [o for o, _ in v] for k, v in search(
        InnerHits(Sort([FieldSort("items.n")]), 1, 1, None)).items()} == {1: [2], 3: []}
    lit = search(InnerHits(None, None, None, Highlight([HighlightParameter("items.t")])))
    fragments = {k: [h.highlight_fields[0].field_fragments for _, h in v if h.highlight_fields]
                 for k, v in lit.items()}
    assert fragments[1] == [] and [o for o, _ in lit[1]] == [0, 2]   # the query is on tag
    resp = client.search("t", "idx", SearchQuery(NestedQuery(
        "items", MatchQuery("items.t", "red"), ScoreMode.NONE,
        InnerHits(None, None, None, Highlight([HighlightParameter("items.t")])))))
    row3 = next(h for h in resp.search_hits if h.row[0][0][1] == 3)
    assert row3.search_inner_hits[0].path == "items"
    [hit] = row3.search_inner_hits[0].search_hits
    assert hit.highlight_result.highlight_fields[0].field_fragments == ["<em>red</em> <em>red</em> rose"]
