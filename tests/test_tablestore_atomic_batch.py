"""An atomic BatchWriteRow (``is_atomic``): each table's rows share one
partition key value and are written all or nothing (writes.check_atomic,
RowWriter.run_atomic); rows of two partition key values are refused with the
service's OTSDataOutOfRange, row by row."""
import pytest

import regions
from regions import PUREPYTHON
from regions.tablestore import pkcodec
from regions.tablestore import (BatchWriteRowRequest, Condition, DeleteRowItem, OTSClient,
                                PutRowItem, Row, RowExistenceExpectation, TableInBatchWriteRowItem,
                                TableMeta, TableOptions, UpdateRowItem)

T, U = "orders", "other"
IGNORE, EXIST, NOT_EXIST = (RowExistenceExpectation.IGNORE, RowExistenceExpectation.EXPECT_EXIST,
                            RowExistenceExpectation.EXPECT_NOT_EXIST)


@pytest.fixture
def client(tmp_path):
    c = OTSClient(str(tmp_path / "store"), server_options=regions.ServerOptions(sync=True))
    for name in (T, U):
        c.create_table(TableMeta(name, [("uid", "INTEGER"), ("oid", "STRING")]), TableOptions(),
                       split_points=[100, 200])
    yield c
    c.close()


def put(uid, oid, n, expect=IGNORE):
    return PutRowItem(Row([("uid", uid), ("oid", oid)], [("n", n)]), Condition(expect))


def update(uid, oid, n):
    return UpdateRowItem(Row([("uid", uid), ("oid", oid)], {"put": [("m", n)]}), Condition(IGNORE))


def delete(uid, oid):
    return DeleteRowItem(Row([("uid", uid), ("oid", oid)]), Condition(IGNORE))


def atomic(c, tables, is_atomic=True):
    req = BatchWriteRowRequest(is_atomic=is_atomic)
    for name, items in tables.items():
        req.add(TableInBatchWriteRowItem(name, list(items)))
    resp = c.batch_write_row(req)
    out = {}
    for name in tables:
        items = (resp.get_put_by_table(name) + resp.get_update_by_table(name)
                 + resp.get_delete_by_table(name))
        out[name] = [(r.is_ok, r.error_code, r.error_message)
                     for r in sorted(items, key=lambda r: r.index)]
    return out


def rows(c, table=T):
    got = c.get_range(table, "FORWARD", [("uid", regions.tablestore.INF_MIN),
                                         ("oid", regions.tablestore.INF_MIN)],
                      [("uid", regions.tablestore.INF_MAX), ("oid", regions.tablestore.INF_MAX)],
                      max_version=1)[2]
    return {tuple(v for _, v in r.primary_key): {n: v for n, v, _ in r.attribute_columns}
            for r in got}


def fsyncs(c, table=T):
    return sum(r["wal_fsyncs"] for r in c._server.metrics()["tables"][table])


def test_rows_of_one_partition_key_are_written_together_in_one_region_write(client):
    before = fsyncs(client)
    result = atomic(client, {T: [put(7, "a", 1), put(7, "b", 2), update(7, "c", 3),
                                 delete(7, "d")]})
    assert result[T] == [(True, None, None)] * 4
    assert fsyncs(client) - before == 1
    assert rows(client) == {(7, "a"): {"n": 1}, (7, "b"): {"n": 2}, (7, "c"): {"m": 3}}


def test_rows_of_two_partition_keys_are_refused_each_with_the_service_error(client):
    result = atomic(client, {T: [put(7, "a", 1), put(7, "b", 2), put(8, "a", 3), put(9, "a", 4)]})
    msg = "Data out of scope of atomic. Atomic PartKey:7. Data PartKey:8"
    assert result[T] == [(False, "OTSDataOutOfRange", msg)] * 4
    assert rows(client) == {}


def test_a_string_partition_key_is_printed_as_the_java_sdk_test_reads_it(tmp_path):
    with OTSClient(":memory:") as c:
        c.create_table(TableMeta("s", [("pk", "STRING"), ("k", "INTEGER")]), TableOptions())
        req = BatchWriteRowRequest(is_atomic=True)
        req.add(TableInBatchWriteRowItem("s", [
            PutRowItem(Row([("pk", str(i)), ("k", 1)], [("c", 1)]), Condition(IGNORE))
            for i in range(3)]))
        items = c.batch_write_row(req).get_put_by_table("s")
        assert {(r.error_code, r.error_message) for r in items} == {
            ("OTSDataOutOfRange", "Data out of scope of atomic. Atomic PartKey:0. Data PartKey:1")}


def test_a_failed_condition_fails_every_row_and_writes_nothing(client):
    atomic(client, {T: [put(7, "a", 1)]})
    result = atomic(client, {T: [put(7, "b", 2), put(7, "a", 9, NOT_EXIST), update(7, "c", 3)]})
    failed = (False, "OTSConditionCheckFail", "Condition check failed.")
    assert result[T] == [failed] * 3
    assert rows(client) == {(7, "a"): {"n": 1}}


def test_the_row_whose_condition_failed_is_charged_the_others_are_not(client):
    req = BatchWriteRowRequest(is_atomic=True)
    req.add(TableInBatchWriteRowItem(T, [put(7, "b", 2), put(7, "a", 9, EXIST)]))
    items = sorted(client.batch_write_row(req).get_put_by_table(T), key=lambda r: r.index)
    assert items[0].consumed is None
    assert (items[1].consumed.read, items[1].consumed.write) == (1, 1)


def test_a_row_refused_by_its_checks_fails_every_row(client):
    bad = PutRowItem(Row([("uid", 7), ("oid", "x")], [("n", float("nan"))]), Condition(IGNORE))
    result = atomic(client, {T: [put(7, "a", 1), bad]})
    assert [r[0] for r in result[T]] == [False, False]
    assert result[T][0][1:] == result[T][1][1:]
    assert rows(client) == {}


def test_each_table_is_all_or_nothing_on_its_own(client):
    result = atomic(client, {T: [put(7, "a", 1), put(8, "a", 1)], U: [put(5, "a", 1), put(5, "b", 2)]})
    assert [r[0] for r in result[T]] == [False, False]
    assert result[U] == [(True, None, None)] * 2
    assert rows(client) == {}
    assert rows(client, U) == {(5, "a"): {"n": 1}, (5, "b"): {"n": 2}}


def test_a_repeated_row_ends_as_the_same_batch_without_is_atomic_leaves_it(client):
    items = [put(7, "a", 1), update(7, "a", 2), put(7, "b", 3), delete(7, "b"), put(7, "b", 4)]
    assert atomic(client, {T: items})[T] == [(True, None, None)] * 5
    got = rows(client)
    with OTSClient(":memory:") as other:
        other.create_table(TableMeta(T, [("uid", "INTEGER"), ("oid", "STRING")]), TableOptions())
        atomic(other, {T: items}, is_atomic=False)
        assert got == rows(other) == {(7, "a"): {"n": 1, "m": 2}, (7, "b"): {"n": 4}}


@pytest.mark.skipif(PUREPYTHON, reason="no C path (LSM_REGIONS_PUREPYTHON)")
def test_an_atomic_batch_never_takes_the_c_path(client, monkeypatch):
    assert client._writer.c_path is not None

    def refuse(*args):
        raise AssertionError("the C path took an atomic batch")
    monkeypatch.setattr(client._writer, "c_path", type("W", (), {"batch": staticmethod(refuse)})())
    assert atomic(client, {T: [put(7, "a", 1), put(7, "b", 2)]})[T] == [(True, None, None)] * 2


def test_a_failed_region_write_fails_every_row_and_writes_nothing(client, monkeypatch):
    def fail(table, batch, sync=None):
        raise OSError("disk on fire")
    monkeypatch.setattr(client._writer.server, "write", fail)
    result = atomic(client, {T: [put(7, "a", 1), put(7, "b", 2)]})
    assert result[T] == [(False, "OTSInternalServerError", "Internal server error.")] * 2
    monkeypatch.undo()
    assert rows(client) == {}


def test_a_split_asked_inside_a_partition_key_keeps_it_whole_for_an_atomic_batch(client):
    for i in range(300):
        atomic(client, {T: [put(7, "r%04d" % i, i)]}, is_atomic=False)
    client._server.flush_all()
    first = client._server.regions(T)[0]          # [*, 100): partition key 7 alone
    inside = pkcodec.encode_pk(["INTEGER", "STRING"], [7, "r0150"])
    with pytest.raises(regions.HotPartitionError):
        client._server.split_region(T, first.region_id, inside)
    before = fsyncs(client)
    result = atomic(client, {T: [put(7, "r0000", -1), put(7, "r0299", -2)]})
    assert result[T] == [(True, None, None)] * 2
    assert fsyncs(client) - before == 1


def test_the_sdk_class_with_an_is_atomic_attribute_is_honoured(client):
    tablestore = pytest.importorskip("tablestore")
    req = tablestore.BatchWriteRowRequest()
    req.is_atomic = True
    req.add(tablestore.TableInBatchWriteRowItem(T, [
        tablestore.PutRowItem(tablestore.Row([("uid", 7), ("oid", "a")], [("n", 1)]),
                              tablestore.Condition("IGNORE")),
        tablestore.PutRowItem(tablestore.Row([("uid", 8), ("oid", "a")], [("n", 1)]),
                              tablestore.Condition("IGNORE"))]))
    items = client.batch_write_row(req).get_put_by_table(T)
    assert {r.error_code for r in items} == {"OTSDataOutOfRange"}
