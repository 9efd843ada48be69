"""A search index's dynamic schema change (the service's reindex): a reindex
index made from a source index, searches shared between the two by weight,
the switch that swaps their names, the old schema's index dropped; kept
across a reopen and a crash between the switch's two records; and the same
over the wire with the Go and Java SDKs' fields (reindexwire.py)."""
import pytest
import tablestore as ts
from tablestore.protobuf import search_pb2 as spb

from regions.otsserver import reindexwire
from regions.tablestore import OTSClient, OTSServiceError, Row, TableMeta
from test_otsserver_sdk import error_of, raw_post

OLD = ts.SearchIndexMeta([ts.FieldSchema("n", ts.FieldType.LONG, enable_sort_and_agg=True)])
NEW = ts.SearchIndexMeta([ts.FieldSchema("n", ts.FieldType.LONG, enable_sort_and_agg=True),
                          ts.FieldSchema("tag", ts.FieldType.KEYWORD)])
ROWS = 20


def _client(path):
    c = OTSClient(str(path))
    if "t" not in c.list_table():
        c.create_table(TableMeta("t", [("id", "INTEGER")]))
    return c


def _put(c, ids):
    for i in ids:
        c.put_row("t", Row([("id", i)], [("n", i), ("tag", "k%d" % (i % 2))]))


def _fields(c, index):
    meta, _ = c.describe_search_index("t", index)
    return [f.field_name for f in meta.fields]


def _by_tag(c, index, tag="k1"):
    """The ids of index's rows whose tag is ``tag`` (the new schema's field)."""
    r = c.search("t", index, ts.SearchQuery(ts.TermQuery("tag", tag), limit=100,
                                            get_total_count=True),
                 ts.ColumnsToGet(return_type=ts.ColumnReturnType.NONE))
    return sorted(row[0][0][1] for row in r.rows)


def _pair(tmp_path):
    c = _client(tmp_path)
    _put(c, range(ROWS))
    c.create_search_index("t", "idx", OLD)
    c.create_search_index("t", "idx_reindex", NEW, source_index_name="idx")
    assert c.wait_for_search_index("t", "idx") and c.wait_for_search_index("t", "idx_reindex")
    return c


def _code(fn, *args, **kw):
    with pytest.raises(OTSServiceError) as e:
        fn(*args, **kw)
    return e.value.code, e.value.message


def test_a_reindex_index_is_made_from_its_source_and_paired_with_it(tmp_path):
    c = _pair(tmp_path)
    assert c.search_index_pair("t", "idx") == ("idx_reindex", [])
    assert c.search_index_pair("t", "idx_reindex") == ("idx", [])
    assert _fields(c, "idx") == ["n"] and _fields(c, "idx_reindex") == ["n", "tag"]
    assert _by_tag(c, "idx_reindex") == [i for i in range(ROWS) if i % 2]
    assert _code(c.search, "t", "idx", ts.SearchQuery(ts.TermQuery("tag", "k1")))[0] \
        == "OTSParameterInvalid"                 # the old schema has no tag


def test_a_reindex_index_is_refused_what_the_service_refuses(tmp_path):
    c = _client(tmp_path)
    c.create_search_index("t", "idx", OLD)
    code, message = _code(c.create_search_index, "t", "idx2", NEW, source_index_name="idx")
    assert code == "OTSParameterInvalid" and "_reindex" in message
    assert _code(c.create_search_index, "t", "x_reindex", NEW,
                 source_index_name="nope")[0] == "OTSMetaNotMatch"
    c.create_search_index("t", "idx_reindex", NEW, source_index_name="idx")
    code, message = _code(c.create_search_index, "t", "idx2_reindex", NEW,
                          source_index_name="idx")
    assert "already in a schema change" in message
    assert sorted(n for _, n in c.list_search_index("t")) == ["idx", "idx_reindex"]


def test_weights_share_the_source_s_searches(tmp_path):
    c = _pair(tmp_path)
    c.update_search_index("t", "idx", query_flow_weights=[("idx", 0), ("idx_reindex", 100)])
    assert c.search_index_pair("t", "idx") == ("idx_reindex", [["idx", 0], ["idx_reindex", 100]])
    for _ in range(5):                    # every search of idx reads the new schema's index
        assert _by_tag(c, "idx") == [i for i in range(ROWS) if i % 2]
    c.update_search_index("t", "idx", query_flow_weights=[("idx", 100), ("idx_reindex", 0)])
    assert _code(c.search, "t", "idx", ts.SearchQuery(ts.TermQuery("tag", "k1")))[0] \
        == "OTSParameterInvalid"
    for bad in ([("other", 10)], [("idx", 101)], [("idx", 1), ("idx", 2)], [("idx", "5")]):
        code, message = _code(c.update_search_index, "t", "idx", query_flow_weights=bad)
        assert code == "OTSParameterInvalid" and "query_flow_weight" in message
    assert c.search_index_pair("t", "idx")[1] == [["idx", 100], ["idx_reindex", 0]]
    c2 = _client(tmp_path / "other")
    c2.create_search_index("t", "solo", OLD)
    assert "no reindex index" in _code(c2.update_search_index, "t", "solo",
                                       query_flow_weights=[("solo", 1)])[1]


def test_the_switch_swaps_the_names_and_both_keep_following_the_table(tmp_path):
    c = _pair(tmp_path)
    c.update_search_index("t", "idx", query_flow_weights=[("idx", 50), ("idx_reindex", 50)])
    assert "only switch with its reindex" in _code(
        c.update_search_index, "t", "idx", switch_index_name="other")[1]
    c.update_search_index("t", "idx", switch_index_name="idx_reindex")
    assert _fields(c, "idx") == ["n", "tag"] and _fields(c, "idx_reindex") == ["n"]
    assert c.search_index_pair("t", "idx") == ("idx_reindex", [])       # weights cleared
    assert c.search_index_pair("t", "idx_reindex") == ("idx", [])
    _put(c, range(ROWS, ROWS + 4))                                      # after the switch
    assert c.wait_for_search_index("t", "idx") and c.wait_for_search_index("t", "idx_reindex")
    assert _by_tag(c, "idx") == [i for i in range(ROWS + 4) if i % 2]
    old = c.search("t", "idx_reindex", ts.SearchQuery(ts.MatchAllQuery(), limit=0,
                                                       get_total_count=True))
    assert old.total_count == ROWS + 4
    c.delete_search_index("t", "idx_reindex")       # the old schema's index, no longer needed
    assert c.search_index_pair("t", "idx") == (None, [])
    c.close()
    c = _client(tmp_path)                           # the names and files as they were left
    assert [n for _, n in c.list_search_index("t")] == ["idx"]
    assert _fields(c, "idx") == ["n", "tag"]
    assert c.wait_for_search_index("t", "idx")
    assert _by_tag(c, "idx") == [i for i in range(ROWS + 4) if i % 2]


def test_a_switch_cut_short_between_its_two_records_is_finished_at_open(tmp_path):
    c = _pair(tmp_path)
    indexer = c._indexer
    new = indexer.search_defs[("t", "idx_reindex")]
    # the switch's first record alone: the reindex index already holds the source's name
    new.name, new.brother, new.epoch = "idx", "idx_reindex", new.epoch + 1
    indexer.save_search(new)
    c.close()
    c = _client(tmp_path)
    assert sorted(n for _, n in c.list_search_index("t")) == ["idx", "idx_reindex"]
    assert _fields(c, "idx") == ["n", "tag"] and _fields(c, "idx_reindex") == ["n"]
    assert c.search_index_pair("t", "idx") == ("idx_reindex", [])
    assert c.search_index_pair("t", "idx_reindex") == ("idx", [])
    assert c.wait_for_search_index("t", "idx")
    assert _by_tag(c, "idx") == [i for i in range(ROWS) if i % 2]
    c.close()
    c = _client(tmp_path)                  # settled for good: the same at the next open
    assert _fields(c, "idx") == ["n", "tag"] and _fields(c, "idx_reindex") == ["n"]


def test_the_reindex_fields_over_the_wire(tmp_path):
    """The Go SDK's field numbers: source_index_name (CreateSearchIndexRequest
    4), query_flow_weight (UpdateSearchIndexRequest 4), switch_index_name (3),
    brother_index_name and query_flow_weight (DescribeSearchIndexResponse 4, 5)."""
    from regions.otsserver.cli import make_server
    from test_otsserver_sdk import sdk
    extra = reindexwire._CLASSES
    srv = make_server(str(tmp_path), "127.0.0.1", 0, "inst", "ak", "sk").start()
    try:
        c = sdk(srv)
        c.create_table(ts.TableMeta("t", [("id", "INTEGER")]), ts.TableOptions(),
                       ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
        c.create_search_index("t", "idx", OLD)
        create = spb.CreateSearchIndexRequest(table_name="t", index_name="idx_reindex")
        create.schema.field_schemas.add(field_name="tag", field_type=spb.KEYWORD, index=True)
        body = create.SerializeToString() + extra["CreateExtra"](
            source_index_name="idx").SerializeToString()
        status, data = raw_post(srv, "CreateSearchIndex", body)
        assert status == 200, error_of(data)
        update = spb.UpdateSearchIndexRequest(table_name="t", index_name="idx")
        weights = extra["UpdateExtra"]()
        weights.query_flow_weight.add(index_name="idx", weight=0)
        weights.query_flow_weight.add(index_name="idx_reindex", weight=100)
        status, data = raw_post(srv, "UpdateSearchIndex",
                                update.SerializeToString() + weights.SerializeToString())
        assert status == 200, error_of(data)

        def described(index):
            status, data = raw_post(srv, "DescribeSearchIndex", spb.DescribeSearchIndexRequest(
                table_name="t", index_name=index).SerializeToString())
            assert status == 200, error_of(data)
            resp, more = spb.DescribeSearchIndexResponse(), extra["DescribeExtra"]()
            resp.ParseFromString(data)
            more.ParseFromString(data)
            return ([f.field_name for f in resp.schema.field_schemas], more.brother_index_name,
                    [(w.index_name, w.weight) for w in more.query_flow_weight])

        assert described("idx") == (["n"], "idx_reindex", [("idx", 0), ("idx_reindex", 100)])
        switch = extra["UpdateExtra"](switch_index_name="idx_reindex")
        status, data = raw_post(srv, "UpdateSearchIndex",
                                update.SerializeToString() + switch.SerializeToString())
        assert status == 200, error_of(data)
        assert described("idx") == (["tag"], "idx_reindex", [])
        assert described("idx_reindex") == (["n"], "idx", [])
        meta, _ = c.describe_search_index("t", "idx")        # the Python SDK: unknown fields
        assert [f.field_name for f in meta.fields] == ["tag"]
        switch = extra["UpdateExtra"](switch_index_name="nope")
        status, data = raw_post(srv, "UpdateSearchIndex",
                                update.SerializeToString() + switch.SerializeToString())
        assert status == 400 and error_of(data)[0] == "OTSParameterInvalid"
    finally:
        srv.stop()
