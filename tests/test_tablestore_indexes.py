"""Secondary indexes on the embedded client (regions/tablestore/indexes.py):
their rows, their rules, their catalogue, and their state across a reopen."""
import pytest

from regions.tablestore import (OTSClient, OTSClientError, OTSServiceError, BatchWriteRowRequest,
                                CapacityUnit, Condition, Direction, PutRowItem,
                                ReservedThroughput, Row, RowExistenceExpectation,
                                TableInBatchWriteRowItem, TableMeta, TableOptions, INF_MAX,
                                INF_MIN, SecondaryIndexMeta, SecondaryIndexType)
from regions.tablestore.indexes import FEED_SUFFIX, REFS_SUFFIX

GLOBAL, LOCAL = SecondaryIndexType.GLOBAL_INDEX, SecondaryIndexType.LOCAL_INDEX
IGNORE = Condition(RowExistenceExpectation.IGNORE)
DEFINED = [("name", "STRING"), ("age", "INTEGER"), ("score", "DOUBLE"), ("tag", "BINARY")]


def make(client, indexes=(), name="users", options=None, defined=DEFINED):
    meta = TableMeta(name, [("uid", "STRING"), ("seq", "INTEGER")], defined_columns=list(defined))
    client.create_table(meta, options or TableOptions(), ReservedThroughput(CapacityUnit(0, 0)),
                        secondary_indexes=list(indexes))


def rows_of(client, table):
    """Every row of ``table`` (a base table or an index) as (pk tuple, {column: value})."""
    names = client._schemas[table].names
    start, out = [(n, INF_MIN) for n in names], []
    while start is not None:
        _, start, rows, _ = client.get_range(table, Direction.FORWARD, start,
                                             [(n, INF_MAX) for n in names])
        out += [(tuple(v for _, v in r.primary_key),
                 {c[0]: c[1] for c in r.attribute_columns}) for r in rows]
    return out


def put(client, uid, seq, **columns):
    client.put_row("users", Row([("uid", uid), ("seq", seq)], list(columns.items())))


@pytest.fixture
def client():
    c = OTSClient(":memory:")
    yield c
    c.close()


def test_a_global_index_holds_the_index_columns_then_the_rest_of_the_base_key(client):
    make(client, [SecondaryIndexMeta("by_name", ["name"], ["age"])])
    put(client, "u1", 1, name="bob", age=30, score=1.5)
    put(client, "u2", 1, name="amy", age=25)
    put(client, "u3", 1, age=40)                       # no name: not indexed (sparse)
    assert client.wait_for_indexes("users")
    assert rows_of(client, "by_name") == [(("amy", "u2", 1), {"age": 25}),
                                          (("bob", "u1", 1), {"age": 30})]


def test_an_update_moves_the_entry_and_a_delete_removes_it(client):
    make(client, [SecondaryIndexMeta("by_age", ["age"], ["name"])])
    put(client, "u1", 1, name="bob", age=30)
    put(client, "u2", 1, name="amy", age=25)
    client.update_row("users", Row([("uid", "u1"), ("seq", 1)], {"put": [("age", 31)]}), IGNORE)
    client.update_row("users", Row([("uid", "u2"), ("seq", 1)], {"delete_all": ["name"]}), IGNORE)
    assert client.wait_for_indexes("users")
    assert rows_of(client, "by_age") == [((25, "u2", 1), {}), ((31, "u1", 1), {"name": "bob"})]
    client.update_row("users", Row([("uid", "u1"), ("seq", 1)], {"delete_all": ["age"]}), IGNORE)
    client.delete_row("users", Row([("uid", "u2"), ("seq", 1)]), IGNORE)
    assert client.wait_for_indexes("users")
    assert rows_of(client, "by_age") == []


def test_an_index_column_of_the_wrong_type_in_the_row_is_not_indexed(client):
    make(client, [SecondaryIndexMeta("by_age", ["age"], [])])
    put(client, "u1", 1, age="thirty")
    put(client, "u2", 1, age=20)
    assert client.wait_for_indexes("users")
    assert [pk for pk, _ in rows_of(client, "by_age")] == [(20, "u2", 1)]


def test_a_local_index_is_readable_as_soon_as_the_write_returns(client):
    make(client, [SecondaryIndexMeta("by_uid_age", ["uid", "age"], ["name"], LOCAL)])
    for i in range(20):
        put(client, "u%d" % (i % 3), i, age=i * 7 % 5, name="n%d" % i)
        got = client.get_row("by_uid_age", [("uid", "u%d" % (i % 3)), ("age", i * 7 % 5),
                                            ("seq", i)])[1]
        assert got is not None and got.attribute_columns[0][:2] == ("name", "n%d" % i)
    expected = sorted(((("u%d" % (i % 3)), i * 7 % 5, i), {"name": "n%d" % i})
                      for i in range(20))
    assert rows_of(client, "by_uid_age") == expected


def test_batch_writes_and_transactions_feed_the_indexes(client):
    make(client, [SecondaryIndexMeta("by_name", ["name"], []),
                  SecondaryIndexMeta("loc", ["uid", "name"], [], LOCAL)])
    request = BatchWriteRowRequest()
    request.add(TableInBatchWriteRowItem("users", [
        PutRowItem(Row([("uid", "u%d" % i), ("seq", 0)], [("name", "x%d" % i)]), IGNORE)
        for i in range(10)]))
    assert client.batch_write_row(request).is_all_succeed()
    txn = client.start_local_transaction("users", [("uid", "u1")])
    client.put_row("users", Row([("uid", "u1"), ("seq", 1)], [("name", "t")]),
                   transaction_id=txn)
    assert [pk for pk, _ in rows_of(client, "loc") if pk[0] == "u1"] == [("u1", "x1", 0)]
    client.commit_transaction(txn)
    assert [pk for pk, _ in rows_of(client, "loc") if pk[0] == "u1"] == \
        [("u1", "t", 1), ("u1", "x1", 0)]
    assert client.wait_for_indexes("users")
    assert len(rows_of(client, "by_name")) == 11


def test_index_tables_refuse_every_write_and_are_not_listed(client):
    make(client, [SecondaryIndexMeta("by_name", ["name"], [])])
    pk = [("name", "a"), ("uid", "u"), ("seq", 1)]
    for call in (lambda: client.put_row("by_name", Row(pk)),
                 lambda: client.update_row("by_name", Row(pk, {"put": [("x", 1)]}), IGNORE),
                 lambda: client.delete_row("by_name", Row(pk), IGNORE)):
        with pytest.raises(OTSServiceError) as e:
            call()
        assert (e.value.code, e.value.message) == ("OTSParameterInvalid",
                                                   "Index table by_name cannot be written.")
    request = BatchWriteRowRequest()
    request.add(TableInBatchWriteRowItem("by_name", [PutRowItem(Row(pk), IGNORE)]))
    item = client.batch_write_row(request).get_put()[1][0]
    assert (item.is_ok, item.error_code) == (False, "OTSParameterInvalid")
    assert rows_of(client, "by_name") == []
    assert client.list_table() == ("users",)
    for call in (lambda: client.delete_table("by_name"),
                 lambda: client.update_table("by_name", TableOptions(time_to_live=-1))):
        with pytest.raises(OTSServiceError) as e:
            call()
        assert e.value.code == "OTSObjectNotExist"


def test_describe_table_lists_the_indexes_with_their_full_key(client):
    make(client, [SecondaryIndexMeta("by_name", ["name"], ["age"]),
                  SecondaryIndexMeta("loc", ["uid", "age"], [], LOCAL)])
    d = client.describe_table("users")
    assert d.table_meta.defined_columns == DEFINED
    got = [(m.index_name, m.primary_key_names, m.defined_column_names, m.index_type,
            m.index_update_mode, m.index_sync_phase) for m in d.secondary_indexes]
    # the declared index columns, as the service lists them (the vendor's tests)
    assert got == [("by_name", ["name"], ["age"], GLOBAL, "IUM_ASYNC_INDEX", "ISP_INCR"),
                   ("loc", ["uid", "age"], [], LOCAL, "IUM_SYNC_INDEX", "ISP_INCR")]
    # an index's own name describes its table: the whole key, its attributes
    i = client.describe_table("by_name")
    assert (i.table_meta.table_name, i.table_meta.schema_of_primary_key,
            i.table_meta.defined_columns, i.secondary_indexes) == \
        ("by_name", [("name", "STRING"), ("uid", "STRING"), ("seq", "INTEGER")],
         [("age", "INTEGER")], [])


def test_create_secondary_index_back_fills_the_rows_already_there(client):
    make(client)
    for i in range(2500):
        put(client, "u%04d" % i, i, name="n%d" % (i % 10))
    client.create_secondary_index("users", SecondaryIndexMeta("by_name", ["name"], []), True)
    client.create_secondary_index("users", SecondaryIndexMeta("later", ["age"], []), False)
    put(client, "new", 0, name="n0", age=1)
    put(client, "u0001", 1, age=2)      # an old row replaced: out of by_name, into 'later'
    assert client.wait_for_indexes("users", timeout=60)
    phases = {m.index_name: m.index_sync_phase for m in client.describe_table("users")
              .secondary_indexes}
    assert phases == {"by_name": "ISP_INCR", "later": "ISP_INCR"}
    assert len(rows_of(client, "by_name")) == 2500    # 2500 + 'new' - 'u0001'
    assert ("n1", "u0001", 1) not in [pk for pk, _ in rows_of(client, "by_name")]
    assert [pk for pk, _ in rows_of(client, "later")] == [(1, "new", 0), (2, "u0001", 1)]


def test_dropping_an_index_drops_its_tables_and_deleting_the_table_drops_its_indexes(client):
    make(client, [SecondaryIndexMeta("a", ["name"], []), SecondaryIndexMeta("b", ["age"], [])])
    put(client, "u", 1, name="x", age=1)
    client.delete_secondary_index("users", "a")
    assert [m.index_name for m in client.describe_table("users").secondary_indexes] == ["b"]
    server_tables = client._server.list_tables()
    assert "a" not in server_tables and "a" + REFS_SUFFIX not in server_tables
    with pytest.raises(OTSServiceError) as e:
        client.delete_secondary_index("users", "a")
    assert e.value.message.startswith("Index does not exist")
    with pytest.raises(OTSServiceError) as e:
        client.delete_secondary_index("nope", "b")
    assert e.value.message.startswith("table [nope] does not exist")
    with pytest.raises(OTSServiceError) as e:
        client.get_row("a", [("name", "x"), ("uid", "u"), ("seq", 1)])
    assert e.value.code == "OTSObjectNotExist"
    client.delete_table("users")
    assert client._server.list_tables() == []


BAD_INDEXES = [
    (SecondaryIndexMeta("i", [], []), "index_pk_count"),
    (SecondaryIndexMeta("i", ["name", "age", "tag", "uid", "seq"], []), "index_pk_count"),
    (SecondaryIndexMeta("i", ["score"], []), "index_column_type"),
    (SecondaryIndexMeta("i", ["nope"], []), "index_column_not_defined"),
    (SecondaryIndexMeta("i", ["name"], ["nope"]), "index_column_not_defined"),
    (SecondaryIndexMeta("i", ["name"], ["uid"]), "index_attribute_is_pk"),
    (SecondaryIndexMeta("i", ["name"], ["name"]), "index_duplicated_column"),
    (SecondaryIndexMeta("i", ["name"], [], LOCAL), "local_index_first_pk"),
    (SecondaryIndexMeta("1i", ["name"], []), "invalid_index_name"),
    (SecondaryIndexMeta("users", ["name"], []), "index_exists"),
]


@pytest.mark.parametrize("meta, error", BAD_INDEXES, ids=[e for _, e in BAD_INDEXES])
def test_a_bad_index_is_refused_with_the_services_error_and_changes_nothing(client, meta, error):
    from regions.tablestore.errors import ERRORS
    make(client)
    before = sorted(client._server.list_tables())
    with pytest.raises(OTSServiceError) as e:
        client.create_secondary_index("users", meta, True)
    assert e.value.code == ERRORS[error][1]
    assert sorted(client._server.list_tables()) == before
    assert client.describe_table("users").secondary_indexes == []


def test_the_index_limits_and_the_tables_prerequisites(client):
    make(client, [SecondaryIndexMeta("i%d" % i, ["name"], []) for i in range(5)])
    with pytest.raises(OTSServiceError, match=r"Number of index per table exceeds the quota:5\."):
        client.create_secondary_index("users", SecondaryIndexMeta("i5", ["age"], []), False)
    with pytest.raises(OTSServiceError, match="max version"):
        client.update_table("users", TableOptions(max_version=2))
    with pytest.raises(OTSServiceError, match="allow update operation on table with index and ttl"):
        client.update_table("users", TableOptions(time_to_live=86400 * 2))
    with pytest.raises(OTSServiceError, match="max version"):
        make(client, [SecondaryIndexMeta("j", ["name"], [])], name="t2",
             options=TableOptions(max_version=3))
    make(client, [SecondaryIndexMeta("j", ["name"], [])], name="t3",
         options=TableOptions(time_to_live=86400 * 2, allow_update=False))
    assert "t2" not in client.list_table() and "t3" in client.list_table()
    with pytest.raises(OTSClientError):
        client.create_secondary_index("users", "not a meta", True)


def test_indexes_their_rows_and_unapplied_feed_entries_survive_a_reopen(tmp_path):
    path = str(tmp_path / "store")
    with OTSClient(path) as c:
        make(c, [SecondaryIndexMeta("by_name", ["name"], []),
                 SecondaryIndexMeta("loc", ["uid", "name"], [], LOCAL)])
        put(c, "u1", 1, name="a")
        assert c.wait_for_indexes("users")
        # a write whose index work was cut short: its feed entry and base row,
        # nothing in the indexes (as after a kill -9 between the two)
        c._indexer.close()                                   # no maintainer
        c._indexer.after_write = lambda *args, **kwargs: None   # no local reconcile
        put(c, "u2", 1, name="b")
        assert [pk for pk, _ in rows_of(c, "loc")] == [("u1", "a", 1)]
        assert list(c._server.scan("users" + FEED_SUFFIX))
    with OTSClient(path) as c:
        assert [m.index_name for m in c.describe_table("users").secondary_indexes] == \
            ["by_name", "loc"]
        assert [pk for pk, _ in rows_of(c, "loc")] == [("u1", "a", 1), ("u2", "b", 1)]
        assert c.wait_for_indexes("users")
        assert [pk for pk, _ in rows_of(c, "by_name")] == [("a", "u1", 1), ("b", "u2", 1)]
        assert list(c._server.scan("users" + FEED_SUFFIX)) == []
        assert c.list_table() == ("users",)


def test_tables_a_crash_left_half_made_are_dropped_at_open(tmp_path):
    path = str(tmp_path / "store")
    with OTSClient(path) as c:
        make(c)
        # an index's tables made, the base schema never updated (the crash point)
        c._server.create_table("orphan", attributes={
            "tablestore": c._schemas["users"].to_json(),
            "index": {"base": "users", "phase": "ISP_FULL", "cursor": None}})
        c._server.create_table("orphan" + REFS_SUFFIX)
    with OTSClient(path) as c:
        assert c._server.list_tables() == ["users"]


def test_an_index_table_is_pre_split_on_its_own_points_and_read_by_every_row_read(client):
    make(client, [SecondaryIndexMeta("by_name", ["name"], ["age"], split_points=["g", "p"])])
    assert len(client._server.regions("by_name")) == 3
    for i, name in enumerate(["amy", "hal", "zed", "kim"]):
        put(client, "u%d" % i, i, name=name, age=i)
    assert client.wait_for_indexes("users")
    from regions.tablestore import BatchGetRowRequest, TableInBatchGetRowItem
    request = BatchGetRowRequest()
    request.add(TableInBatchGetRowItem("by_name", [[("name", "zed"), ("uid", "u2"), ("seq", 2)],
                                                   [("name", "nope"), ("uid", "u"), ("seq", 0)]],
                                        max_version=1))
    got = client.batch_get_row(request).get_result_by_table("by_name")
    assert [r.row.attribute_columns[0][1] if r.row else None for r in got] == [2, None]
    names = [r.primary_key[0][1] for r in client.xget_range(
        "by_name", Direction.BACKWARD, [("name", INF_MAX), ("uid", INF_MAX), ("seq", INF_MAX)],
        [("name", INF_MIN), ("uid", INF_MIN), ("seq", INF_MIN)], CapacityUnit(0, 0))]
    assert names == ["zed", "kim", "hal", "amy"]
    with pytest.raises(OTSClientError):
        client.create_secondary_index("users", SecondaryIndexMeta("bad", ["age"], [],
                                                                  split_points=["x"]), False)


def test_an_index_loading_its_base_data_refuses_reads_until_it_is_done(client):
    make(client)
    put(client, "u", 1, name="a")
    gate = __import__("threading").Event()
    real = client._indexer._backfill
    client._indexer._backfill = lambda *args: (gate.wait(10), real(*args))
    client.create_secondary_index("users", SecondaryIndexMeta("by_name", ["name"], []), True)
    assert [m.index_sync_phase for m in client.describe_table("users").secondary_indexes] == \
        ["ISP_FULL"]
    with pytest.raises(OTSServiceError) as e:
        client.get_row("by_name", [("name", "a"), ("uid", "u"), ("seq", 1)])
    assert e.value.message == "Disallow read index table in building base state"
    gate.set()
    assert client.wait_for_indexes("users")
    assert client.get_row("by_name", [("name", "a"), ("uid", "u"), ("seq", 1)])[1] is not None


def test_defined_columns_are_added_and_deleted_but_not_one_an_index_uses(client):
    make(client, [SecondaryIndexMeta("by_name", ["name"], ["age"])], defined=DEFINED[:2])
    client.add_defined_column("users", [("score", "DOUBLE"), ("tag", "BINARY")])
    assert client.describe_table("users").table_meta.defined_columns == DEFINED
    from regions.tablestore.errors import service_error
    for bad, error, column in (([("score", "DOUBLE")], "defined_column_exists", "score"),
                               ([("uid", "STRING")], "defined_column_is_pk", "uid"),
                               ([("x", "INTEGER"), ("x", "STRING")], "defined_column_exists", "x"),
                               ([("c%d" % i, "STRING") for i in range(29)],
                                "defined_columns_limit", None)):
        with pytest.raises(OTSServiceError) as e:
            client.add_defined_column("users", bad)
        assert e.value.message == service_error(error, column=column).message
    assert client.describe_table("users").table_meta.defined_columns == DEFINED
    with pytest.raises(OTSClientError):
        client.add_defined_column("users", [("x", "FLOAT")])
    for used in ("name", "age"):
        with pytest.raises(OTSServiceError, match="used by index by_name"):
            client.delete_defined_column("users", [used])
    client.delete_defined_column("users", ["score"])
    assert client.describe_table("users").table_meta.defined_columns == \
        [DEFINED[0], DEFINED[1], DEFINED[3]]
    with pytest.raises(OTSServiceError, match="does not exist"):
        client.delete_defined_column("users", ["score"])
    with pytest.raises(OTSServiceError, match="primary key column"):
        make(client, defined=[("uid", "STRING")], name="t2")


def test_the_index_calls_are_metered_by_their_wire_names(client):
    make(client)
    client.create_secondary_index("users", SecondaryIndexMeta("by_name", ["name"], []), False)
    client.add_defined_column("users", [("extra", "STRING")])
    client.delete_defined_column("users", ["extra"])
    client.delete_secondary_index("users", "by_name")
    with pytest.raises(OTSServiceError):
        client.delete_secondary_index("users", "by_name")
    api = client.metrics()["api"]
    assert {k: v for k, v in api["requests"].items() if k != "CreateTable"} == \
        {"CreateIndex": 1, "AddDefinedColumn": 1, "DeleteDefinedColumn": 1, "DropIndex": 2}
    assert api["errors"] == {"DropIndex": {"OTSParameterInvalid": 1}}


def test_no_feed_entry_is_consumed_before_the_reopened_indexer_knows_its_indexes(tmp_path,
                                                                                 monkeypatch):
    import time
    from regions.tablestore import indexes
    path = str(tmp_path / "store")
    with OTSClient(path) as c:
        make(c, [SecondaryIndexMeta("by_name", ["name"], [])])
        c._indexer.close()                                   # the backlog stays in the feed
        for i in range(300):
            put(c, "u%03d" % i, i, name="n%d" % i)
    real = indexes.Indexer._attach

    def slow_attach(self, *args):                            # widen open()'s window
        real(self, *args)
        time.sleep(0.3)
    monkeypatch.setattr(indexes.Indexer, "_attach", slow_attach)
    with OTSClient(path) as c:
        assert c.wait_for_indexes("users")
        assert len(rows_of(c, "by_name")) == 300


def test_writers_wait_while_a_global_index_lags_too_far(client, monkeypatch):
    import threading
    import time
    from regions.tablestore import indexes
    monkeypatch.setattr(indexes, "MAX_BACKLOG", 5)
    monkeypatch.setattr(indexes, "_ADMIT_WAIT_S", 30.0)
    make(client, [SecondaryIndexMeta("by_name", ["name"], [])])
    gate, drain = threading.Event(), client._indexer._drain

    def held_drain(*args):
        gate.wait()
        return drain(*args)
    monkeypatch.setattr(client._indexer, "_drain", held_drain)
    done = []

    def writer():
        for i in range(10):
            put(client, "u%d" % i, i, name="n")
            done.append(i)
    thread = threading.Thread(target=writer)
    thread.start()
    deadline = time.monotonic() + 10
    while len(done) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    assert len(done) == 6 and thread.is_alive()      # 6 entries pending: the 7th waits
    gate.set()
    thread.join(10)
    assert not thread.is_alive() and len(done) == 10
    assert client.wait_for_indexes("users")
    assert len(rows_of(client, "by_name")) == 10


def test_the_maintainer_leaves_a_local_only_tables_feed_to_its_writers(client, monkeypatch):
    import threading
    import time
    make(client, [SecondaryIndexMeta("g", ["name"], [])], name="other")   # a maintainer runs
    make(client, [SecondaryIndexMeta("loc", ["uid", "name"], [], LOCAL)])
    real, reached, go = client._indexer.after_write, threading.Event(), threading.Event()

    def slow_after_write(*args):
        reached.set()
        go.wait(10)
        return real(*args)
    monkeypatch.setattr(client._indexer, "after_write", slow_after_write)
    writer = threading.Thread(target=put, args=(client, "u", 1), kwargs={"name": "a"})
    writer.start()
    assert reached.wait(10)
    time.sleep(0.3)                       # the maintainer's passes come and go
    assert len(list(client._server.scan("users" + FEED_SUFFIX))) == 1   # still the writer's
    go.set()
    writer.join(10)
    assert [pk for pk, _ in rows_of(client, "loc")] == [("u", "a", 1)]
    assert list(client._server.scan("users" + FEED_SUFFIX)) == []
