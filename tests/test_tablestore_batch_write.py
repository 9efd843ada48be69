"""BatchWriteRow writes a table's rows together: one region write per region,
each row still with its own result (writes.RowWriter.run_batch)."""
import pytest

import regions
from regions import PartialWriteError
from regions.tablestore import pkcodec
from regions.tablestore import (BatchWriteRowRequest, Condition, DeleteRowItem, OTSClient,
                                PutRowItem, Row, RowExistenceExpectation, TableInBatchWriteRowItem,
                                TableMeta, TableOptions, UpdateRowItem)

T = "orders"


@pytest.fixture
def client(tmp_path):
    c = OTSClient(str(tmp_path / "store"), server_options=regions.ServerOptions(sync=True))
    c.create_table(TableMeta(T, [("uid", "INTEGER"), ("oid", "STRING")]), TableOptions(),
                   split_points=[100, 200])
    yield c
    c.close()


def write(c, *items):
    req = BatchWriteRowRequest()
    req.add(TableInBatchWriteRowItem(T, list(items)))
    resp = c.batch_write_row(req)
    items = (resp.get_put_by_table(T) + resp.get_update_by_table(T)
             + resp.get_delete_by_table(T))
    return [(r.is_ok, r.error_code) for r in sorted(items, key=lambda r: r.index)]


def row(c, uid, oid="a"):
    got = c.get_row(T, [("uid", uid), ("oid", oid)], max_version=1)[1]
    return dict((n, v) for n, v, _ in got.attribute_columns) if got else None


def put(uid, n, oid="a", expect=RowExistenceExpectation.IGNORE):
    return PutRowItem(Row([("uid", uid), ("oid", oid)], [("n", n)]), Condition(expect))


def incr(uid, by, oid="a"):
    return UpdateRowItem(Row([("uid", uid), ("oid", oid)], {"increment": [("n", by)]}),
                         Condition(RowExistenceExpectation.IGNORE))


def fsyncs(c):
    return sum(r["wal_fsyncs"] for r in c._server.metrics()["tables"][T])


def test_rows_in_three_regions_cost_one_fsync_per_region(client):
    before = fsyncs(client)
    results = write(client, *[put(uid, uid) for uid in (1, 2, 150, 151, 250, 3)])
    assert results == [(True, None)] * 6
    assert fsyncs(client) - before == 3
    assert [row(client, uid)["n"] for uid in (1, 2, 150, 151, 250, 3)] == [1, 2, 150, 151, 250, 3]


def test_each_row_keeps_its_own_result_and_failed_rows_write_nothing(client):
    write(client, put(1, 10))
    results = write(client, put(1, 11, expect=RowExistenceExpectation.EXPECT_NOT_EXIST),
                    put(2, 20, expect=RowExistenceExpectation.EXPECT_NOT_EXIST),
                    DeleteRowItem(Row([("uid", 3), ("oid", "a")]),
                                  Condition(RowExistenceExpectation.EXPECT_EXIST)))
    assert results == [(False, "OTSConditionCheckFail"), (True, None),
                       (False, "OTSConditionCheckFail")]
    assert (row(client, 1), row(client, 2), row(client, 3)) == ({"n": 10}, {"n": 20}, None)


def set_(uid, name, value, oid="a"):
    return UpdateRowItem(Row([("uid", uid), ("oid", oid)], {"put": [(name, value)]}),
                         Condition(RowExistenceExpectation.IGNORE))


def test_a_repeated_row_is_written_in_request_order(client):
    results = write(client, put(5, 1), set_(5, "m", 2), put(6, 0), set_(6, "m", 3), put(6, 4))
    assert results == [(True, None)] * 5
    assert (row(client, 5), row(client, 6)) == ({"n": 1, "m": 2}, {"n": 4})


def test_a_row_incremented_may_not_be_repeated(client):
    """The atomic counter notes: a row incremented in a batch is written once
    in it; each of its writes fails, the other rows are written."""
    results = write(client, incr(5, 1), incr(5, 2), put(6, 0), incr(7, 4), set_(5, "m", 1))
    assert results == [(False, "OTSParameterInvalid")] * 2 + [(True, None)] * 2 + [
        (False, "OTSParameterInvalid")]
    assert (row(client, 5), row(client, 6), row(client, 7)) == (None, {"n": 0}, {"n": 4})


def test_a_region_part_that_fails_fails_exactly_its_rows(client, monkeypatch):
    # The region server applies the part of region [100, 200) and then fails:
    # its rows are reported written, the others failed, and the store agrees.
    server = client._server
    real = server.write

    def failing(table, pairs, sync=None):
        lo, hi = pkcodec.encode_value("INTEGER", 100), pkcodec.encode_value("INTEGER", 200)
        first = [(key, value) for key, value in pairs if lo <= key < hi]
        assert first, "the write holds the rows of region [100, 200)"
        real(table, first, sync)
        raise PartialWriteError("disk full after one region", frozenset(k for k, _ in first))

    monkeypatch.setattr(server, "write", failing)
    results = write(client, put(1, 1), put(150, 150), put(250, 250))
    monkeypatch.undo()
    assert results == [(False, "OTSInternalServerError"), (True, None),
                       (False, "OTSInternalServerError")]
    assert (row(client, 1), row(client, 150), row(client, 250)) == (None, {"n": 150}, None)


def test_the_region_server_names_the_keys_a_failed_batch_applied(tmp_path):
    import lsm
    with regions.RegionServer.open(str(tmp_path / "s")) as server:
        server.create_table("t", split_keys=[b"m"])
        regs = {r.start: r for r in server._tables["t"].layout[1]}
        regs[b"m"].db.close()          # the second region's store fails the write
        with pytest.raises(PartialWriteError) as e:
            server.write("t", [(b"a", b"v"), (b"b", b"v"), (b"x", b"v")])
        assert e.value.applied_keys == frozenset({b"a", b"b"})
        assert isinstance(e.value.__cause__, lsm.LSMError)
        assert server.get("t", b"a") == b"v"
