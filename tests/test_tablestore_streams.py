"""Tablestore Streams on the embedded client (regions/tablestore/streams.py):
records of every kind of write, the iterator's rules, shards that follow the
regions through splits, enabling and disabling, expiry, and the records
across a reopen and after a crash between the feed and the base write."""
import pytest

import regions
from regions.tablestore import (OTSClient, OTSClientError, OTSServiceError, BatchWriteRowRequest,
                                CapacityUnit, Condition, DeleteRowItem, PutRowItem,
                                ReservedThroughput, Row, RowExistenceExpectation,
                                SecondaryIndexMeta, TableInBatchWriteRowItem, TableMeta,
                                TableOptions, UpdateRowItem)
from regions.tablestore import cells, pkcodec
from regions.tablestore.indexes import FEED_SUFFIX
from regions.tablestore.streams import LOG_SUFFIX, StreamSpecification

IGNORE = Condition(RowExistenceExpectation.IGNORE)
ON = StreamSpecification(True, 24)


def make(client, name="t", stream=ON, indexes=(), defined=()):
    meta = TableMeta(name, [("pk1", "STRING")], defined_columns=list(defined))
    client.create_table(meta, TableOptions(-1, 1 if indexes else 3),
                        ReservedThroughput(CapacityUnit(0, 0)),
                        secondary_indexes=list(indexes), stream_spec=stream)


def stream_id(client, name="t"):
    streams = client.list_stream(name)
    assert len(streams) == 1
    return streams[0].stream_id


def drain(client, iterator):
    """Every record from ``iterator`` to the end of what is there: (records,
    the iterator to go on from, or None if the shard is closed and done)."""
    out = []
    while iterator is not None:
        resp = client.get_stream_record(iterator, limit=7)
        out += resp.records
        if resp.next_shard_iterator == iterator:
            break
        iterator = resp.next_shard_iterator
    return out, iterator


def read_all(client, sid):
    """Every record of the stream, reading each shard to its end after its
    parents (the lineage): {row key value: [records in order]}."""
    desc = client.describe_stream(sid)
    shards = {s.shard_id: s for s in desc.shards}
    done, by_row, order = set(), {}, []
    while len(done) < len(shards):
        for s in shards.values():
            if s.shard_id in done or any(p is not None and p in shards and p not in done
                                         for p in (s.parent_id, s.parent_sibling_id)):
                continue
            records, _ = drain(client, client.get_shard_iterator(sid, s.shard_id))
            for r in records:
                by_row.setdefault(r.primary_key[0][1], []).append(r)
            order.append(s.shard_id)
            done.add(s.shard_id)
    return by_row, order


def put(client, key, name="t", **cols):
    client.put_row(name, Row([("pk1", key)], list(cols.items())), IGNORE)


@pytest.fixture
def client():
    c = OTSClient(":memory:")
    yield c
    c.close()


def test_put_update_delete_records_as_the_go_sdk_reads_them(client):
    make(client)
    sid = stream_id(client)
    desc = client.describe_stream(sid)
    assert (desc.table_name, desc.expiration_time, desc.stream_status) == ("t", 24, "STREAM_ACTIVE")
    assert len(desc.shards) == 1 and desc.shards[0].parent_id is None
    it = client.get_shard_iterator(sid, desc.shards[0].shard_id)
    records, it = drain(client, it)
    assert records == []
    put(client, "rowkey", colToDel="abc", colToDelAll=True, colToUpdate=123)
    records, it = drain(client, it)
    assert [r.action_type for r in records] == ["PUT_ROW"]
    r = records[0]
    assert r.primary_key == [("pk1", "rowkey")]
    assert [(c.name, c.type, c.value) for c in r.columns] == [
        ("colToDel", "PUT", "abc"), ("colToDelAll", "PUT", True), ("colToUpdate", "PUT", 123)]
    ts = r.columns[0].timestamp
    assert ts > 0 and r.sequence_info.timestamp // 1000 >= ts - 1
    client.update_row("t", Row([("pk1", "rowkey")], {
        "DELETE": [("colToDel", None, ts)], "DELETE_ALL": ["colToDelAll"],
        "PUT": [("colToUpdate", 3.14)]}), IGNORE)
    records, it = drain(client, it)
    assert [(c.name, c.type, c.value, c.timestamp is not None) for c in records[0].columns] == [
        ("colToDel", "DELETE_ONE_VERSION", None, True),
        ("colToDelAll", "DELETE_ALL_VERSIONS", None, False),
        ("colToUpdate", "PUT", 3.14, True)]
    assert records[0].columns[0].timestamp == ts and records[0].action_type == "UPDATE_ROW"
    client.delete_row("t", Row([("pk1", "rowkey")]), IGNORE)
    records, it2 = drain(client, it)
    assert [(r.action_type, r.columns) for r in records] == [("DELETE_ROW", [])]
    # nothing new: the same iterator again, and no records
    again = client.get_stream_record(it2)
    assert again.records == [] and again.next_shard_iterator == it2


def test_batch_writes_conditions_and_transactions_are_recorded_once_each(client):
    make(client)
    sid = stream_id(client)
    shard = client.describe_stream(sid).shards[0].shard_id
    it = client.get_shard_iterator(sid, shard)
    request = BatchWriteRowRequest()
    request.add(TableInBatchWriteRowItem("t", [
        PutRowItem(Row([("pk1", "a")], [("v", 1)]), IGNORE),
        PutRowItem(Row([("pk1", "b")], [("v", 2)]), IGNORE),
        UpdateRowItem(Row([("pk1", "c")], {"put": [("v", 3)]}), IGNORE),
        DeleteRowItem(Row([("pk1", "d")]), IGNORE)]))
    client.batch_write_row(request)
    # a write refused by its condition is not a change
    with pytest.raises(OTSServiceError):
        client.put_row("t", Row([("pk1", "a")], [("v", 9)]),
                       Condition(RowExistenceExpectation.EXPECT_NOT_EXIST))
    txn = client.start_local_transaction("t", [("pk1", "e")])
    client.put_row("t", Row([("pk1", "e")], [("v", 5)]), IGNORE, transaction_id=txn)
    client.commit_transaction(txn)
    records, _ = drain(client, it)
    assert [(r.primary_key[0][1], r.action_type) for r in records] == [
        ("a", "PUT_ROW"), ("b", "PUT_ROW"), ("c", "UPDATE_ROW"), ("d", "DELETE_ROW"),
        ("e", "PUT_ROW")]


def test_enable_and_disable_through_update_table(client):
    make(client, stream=None)
    assert client.list_stream("t") == []
    details = client.describe_table("t").stream_details
    assert details.enable_stream is False and details.stream_id is None
    put(client, "before", v=1)
    resp = client.update_table("t", stream_spec=StreamSpecification(True, 12))
    assert resp.stream_details.enable_stream and resp.stream_details.expiration_time == 12
    first = stream_id(client)
    assert client.describe_table("t").stream_details.stream_id == first
    with pytest.raises(OTSServiceError) as e:          # already enabled
        client.update_table("t", stream_spec=StreamSpecification(True, 12))
    assert e.value.code == "OTSParameterInvalid"
    put(client, "after", v=2)
    by_row, _ = read_all(client, first)
    assert list(by_row) == ["after"]                   # only writes from the enabling on
    client.update_table("t", stream_spec=StreamSpecification(False))
    assert client.list_stream() == [] and not client._server.has_table("t" + LOG_SUFFIX)
    assert not client._server.has_table("t" + FEED_SUFFIX)
    with pytest.raises(OTSServiceError) as e:
        client.describe_stream(first)
    assert e.value.code == "OTSObjectNotExist"
    put(client, "unrecorded", v=3)                     # the table writes on, in C again
    assert "t" in client._writer._c_schemas
    client.update_table("t", stream_spec=StreamSpecification(True, 1))
    assert stream_id(client) != first


@pytest.mark.parametrize("hours", [0, 169, "24", None, True])
def test_a_bad_expiration_time_is_refused_and_changes_nothing(client, hours):
    with pytest.raises((OTSServiceError, OTSClientError)):
        make(client, stream=StreamSpecification(True, hours))
    assert client.list_table() == ()


def test_bad_ids_and_iterators_are_refused(client):
    make(client)
    sid = stream_id(client)
    for call, code in ((lambda: client.describe_stream("nope"), "OTSObjectNotExist"),
                       (lambda: client.get_shard_iterator(sid, "999"), "OTSObjectNotExist"),
                       (lambda: client.get_stream_record("not an iterator"), "OTSParameterInvalid"),
                       (lambda: client.get_stream_record(
                           client.get_shard_iterator(sid, "1"), limit=0), "OTSParameterInvalid")):
        with pytest.raises(OTSServiceError) as e:
            call()
        assert e.value.code == code


def test_shards_follow_a_split_and_a_lineage_reader_sees_each_write_once_in_order():
    server = regions.RegionServer.open(None, regions.ServerOptions(
        split_policy=regions.DisabledSplitPolicy()))
    client = OTSClient(None, server=server)
    try:
        make(client)
        sid = stream_id(client)
        expected = {}
        for i in range(40):
            key = "k%02d" % (i % 20)
            put(client, key, v=i)
            expected.setdefault(key, []).append(i)
        (region,) = server.regions("t")
        server.split_region("t", region.region_id,
                            pkcodec.encode_pk(["STRING"], ["k10"]) + cells.HEAD)
        for i in range(40, 80):
            key = "k%02d" % (i % 20)
            put(client, key, v=i)
            expected.setdefault(key, []).append(i)
        desc = client.describe_stream(sid)
        parent = desc.shards[0]
        children = [s for s in desc.shards if s.parent_id == parent.shard_id]
        assert len(desc.shards) == 3 and len(children) == 2
        # the closed parent reads to its end: then its iterator is None
        records, end = drain(client, client.get_shard_iterator(sid, parent.shard_id))
        assert end is None and len(records) == 40
        by_row, order = read_all(client, sid)
        assert order[0] == parent.shard_id
        assert {k: [r.columns[0].value for r in v] for k, v in by_row.items()} == expected
    finally:
        client.close()
        server.close()


def test_records_expire_and_an_iterator_behind_them_is_refused(client):
    make(client)
    sid = stream_id(client)
    shard = client.describe_stream(sid).shards[0].shard_id
    old = client.get_shard_iterator(sid, shard)
    put(client, "a", v=1)
    stream = client._indexer.stream("t")
    stream.trim(now_us=stream.creation_time + 25 * 3_600_000_000, force=True)
    with pytest.raises(OTSServiceError) as e:
        client.get_stream_record(old)
    assert e.value.code == "OTSTrimmedDataAccess"
    records, _ = drain(client, client.get_shard_iterator(sid, shard))
    assert records == []
    put(client, "b", v=2)
    records, _ = drain(client, client.get_shard_iterator(sid, shard))
    assert [r.primary_key[0][1] for r in records] == ["b"]


def test_an_iterator_from_a_timestamp_starts_at_the_first_record_then(client):
    make(client)
    sid = stream_id(client)
    put(client, "a", v=1)
    put(client, "b", v=2)
    records, _ = drain(client, client.get_shard_iterator(sid, "1"))
    since = records[1].sequence_info.timestamp
    later, _ = drain(client, client.get_shard_iterator(sid, "1", timestamp=since))
    assert [r.primary_key[0][1] for r in later] == ["b"]


def test_a_stream_beside_indexes_keeps_both_in_step(client):
    make(client, indexes=[SecondaryIndexMeta("by_v", ["v"], [])], defined=[("v", "INTEGER")])
    sid = stream_id(client)
    for i in range(50):
        put(client, "k%d" % (i % 7), v=i)
    assert client.wait_for_indexes("t")
    by_row, _ = read_all(client, sid)
    assert sum(len(v) for v in by_row.values()) == 50
    client.delete_secondary_index("t", "by_v")          # the feed stays for the stream
    put(client, "k0", v=99)
    by_row, _ = read_all(client, sid)
    assert by_row["k0"][-1].columns[0].value == 99


def test_records_and_shards_survive_a_reopen(tmp_path):
    client = OTSClient(str(tmp_path))
    make(client)
    sid = stream_id(client)
    put(client, "a", v=1)
    client.close()
    client = OTSClient(str(tmp_path))
    try:
        assert stream_id(client) == sid
        put(client, "b", v=2)
        by_row, _ = read_all(client, sid)
        assert {k: len(v) for k, v in by_row.items()} == {"a": 1, "b": 1}
    finally:
        client.close()


def test_after_a_crash_a_record_is_kept_only_if_its_write_landed(tmp_path):
    """The feed entry is written, then the process dies: before the base
    write (no record at reopen) or after it, before the copy into the log
    (the record at reopen)."""
    client = OTSClient(str(tmp_path))
    make(client)
    sid = stream_id(client)
    indexer, server = client._indexer, client._server
    for key, lands in (("ghost", False), ("landed", True)):
        row_key = pkcodec.encode_pk(["STRING"], [key])
        ops = [(cells.head_key(row_key),
                cells.put_head(client._writer.gens.next(), [("v", 1, None)], cells.now_ms()))]
        indexer.before_write("t", [row_key], [ops])
        if lands:
            server.put("t", *ops[0])
    # what a kill leaves: the feed entries, no copy in the log
    indexer.tables["t"].inflight.clear()
    client.close()
    client = OTSClient(str(tmp_path))
    try:
        by_row, _ = read_all(client, sid)
        assert list(by_row) == ["landed"]
        assert next(iter(client._server.scan("t" + FEED_SUFFIX)), None) is None
    finally:
        client.close()


def test_a_reader_does_not_pass_a_write_still_in_flight(client):
    make(client)
    sid = stream_id(client)
    indexer = client._indexer
    row_key = pkcodec.encode_pk(["STRING"], ["slow"])
    ops = [(cells.head_key(row_key),
            cells.put_head(client._writer.gens.next(), [("v", 1, None)], cells.now_ms()))]
    feed = indexer.before_write("t", [row_key], [ops])     # a writer between its steps
    put(client, "fast", v=2)
    it = client.get_shard_iterator(sid, "1")
    resp = client.get_stream_record(it)
    assert resp.records == [] and resp.next_shard_iterator == it
    client._server.put("t", *ops[0])
    indexer.after_write("t", [row_key], feed)
    records, _ = drain(client, it)
    assert [r.primary_key[0][1] for r in records] == ["slow", "fast"]


def test_an_iterator_from_a_timestamp_kept_across_reopens_misses_no_record(tmp_path):
    """A crash leaves the feed entries of a batch whose base write never
    happened; the open drops them, and the next open hands their seqs out
    again (the stream knows only its records' seqs).  An iterator taken
    from a timestamp in between once stood at the horizon, past those
    seqs: the writes after the second reopen were behind it, never read
    (killloop --stream's reader, with a timestamp)."""
    client = OTSClient(str(tmp_path))
    make(client)
    put(client, "a", v=1)
    indexer = client._indexer
    rows = [pkcodec.encode_pk(["STRING"], ["ghost%d" % i]) for i in range(5)]
    indexer.before_write("t", rows, [[(cells.head_key(r), cells.put_head(
        client._writer.gens.next(), [("v", 1, None)], cells.now_ms()))] for r in rows])
    indexer.tables["t"].inflight.clear()         # what a kill leaves
    client.close()
    client = OTSClient(str(tmp_path))
    sid = stream_id(client)
    stamp = read_all(client, sid)[0]["a"][0].sequence_info.timestamp + 1
    it = client.get_shard_iterator(sid, "1", timestamp=stamp)
    client.close()
    client = OTSClient(str(tmp_path))
    try:
        put(client, "b", v=2)
        records, _ = drain(client, it)
        assert [r.primary_key[0][1] for r in records] == ["b"]
    finally:
        client.close()


class _Killed(Exception):
    pass


@pytest.mark.parametrize("step", ["make_listed", "enable_stream"])
def test_create_table_cut_short_is_finished_at_the_next_open(tmp_path, step, monkeypatch):
    """CreateTable's record lists the indexes and the stream: a crash before
    their tables are made leaves a table the next open completes (was: a
    table without them, and a retry refused as existing)."""
    client = OTSClient(str(tmp_path))

    def killed(*args, **kwargs):
        raise _Killed()
    monkeypatch.setattr(client._indexer, step, killed)
    with pytest.raises(_Killed):
        make(client, indexes=[SecondaryIndexMeta("by_v", ["v"], [])], defined=[("v", "INTEGER")])
    monkeypatch.undo()
    client.close()
    client = OTSClient(str(tmp_path))
    try:
        assert [i.index_name for i in client.describe_table("t").secondary_indexes] == ["by_v"]
        sid = stream_id(client)
        put(client, "a", v=1)
        assert client.wait_for_indexes("t")
        by_row, _ = read_all(client, sid)
        assert list(by_row) == ["a"]
        assert client.get_row("by_v", [("v", 1), ("pk1", "a")])[1] is not None
    finally:
        client.close()


def test_update_table_cut_short_is_finished_at_the_next_open(tmp_path, monkeypatch):
    client = OTSClient(str(tmp_path))
    make(client, stream=None)
    monkeypatch.setattr(client._indexer, "enable_stream", lambda *a, **k: (_ for _ in ()).throw(
        _Killed()))
    with pytest.raises(_Killed):
        client.update_table("t", stream_spec=ON)
    monkeypatch.undo()
    client.close()
    client = OTSClient(str(tmp_path))
    try:
        sid = stream_id(client)
        monkeypatch.setattr(client._indexer, "disable_stream", lambda *a, **k: (_ for _ in ()).throw(
            _Killed()))
        with pytest.raises(_Killed):
            client.update_table("t", stream_spec=StreamSpecification(False))
        monkeypatch.undo()
    finally:
        client.close()
    client = OTSClient(str(tmp_path))
    try:
        assert sid and client.list_stream() == []
        assert not client._server.has_table("t" + LOG_SUFFIX)
        assert not client._server.has_table("t" + FEED_SUFFIX)
    finally:
        client.close()


def test_may_more_record_whenever_the_limit_cut_the_page_and_long_table_names(client):
    # the longest name whose stream can be read (the Java SDK's APITest: the
    # service refuses a longer one's stream id), its log's name longer still
    from regions.tablestore.streams import READABLE_NAME_MAX
    longest = "u" * (READABLE_NAME_MAX + 1)
    make(client, name=longest)
    sid = stream_id(client, longest)
    it = client.get_shard_iterator(sid, client.describe_stream(sid).shards[0].shard_id)
    with pytest.raises(OTSServiceError, match="Invalid stream id"):
        client.get_stream_record(it, limit=1)
    name = "t" * READABLE_NAME_MAX
    make(client, name=name)
    sid = stream_id(client, name)
    for i in range(3):
        put(client, "k%d" % i, name=name, v=i)
    it = client.get_shard_iterator(sid, client.describe_stream(sid).shards[0].shard_id)
    flags = []
    while True:
        resp = client.get_stream_record(it, limit=1)
        flags.append((len(resp.records), resp.may_more_record))
        if resp.next_shard_iterator == it:
            break
        it = resp.next_shard_iterator
    assert flags == [(1, True), (1, True), (1, True), (0, False)]
