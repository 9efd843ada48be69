"""Local transactions, embedded and over the wire with the official SDK.

Every rule runs twice (``api`` fixture): on the embedded OTSClient and on the
SDK 6.4.8 against regions-server, with the same calls and the same expected
codes and messages.  Then: one atomic region write per commit, threads, and a
crash test that SIGKILLs a child in the middle of a stream of commits.
"""
import logging
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest
import tablestore as ts

import regions.tablestore as emb
from regions.otsserver.auth import Authenticator
from regions.otsserver.http import OTSServer
from regions.otsserver.protocol import TablestoreService
from regions.tablestore.transactions import MAX_BYTES

logging.getLogger("tablestore").addHandler(logging.NullHandler())
logging.getLogger("tablestore").setLevel(logging.CRITICAL)

KEY_ID, SECRET, INSTANCE = "ak", "sk", "inst"
TIMEOUT = 0.6          # a short transaction timeout, so that expiry is testable
T = "TransactionTable"
PK = [("PK0", 1), ("PK1", "transaction")]
KEY = [("PK0", 1)]


class Api:
    """One way in (embedded or wire): the client and the SDK-shaped classes it takes."""

    def __init__(self, client, lib, server=None):
        self.c, self.lib, self.server = client, lib, server

    @property
    def embedded(self):
        return self.server is None


@pytest.fixture(params=["embedded", "wire"])
def api(request, tmp_path):
    client = emb.OTSClient(str(tmp_path / "data"), transaction_timeout=TIMEOUT)
    if request.param == "embedded":
        yield Api(client, emb)
        client.close()
        return
    srv = OTSServer("127.0.0.1", 0, TablestoreService(client),
                    Authenticator(INSTANCE, {KEY_ID: SECRET})).start()
    sdk = ts.OTSClient(srv.endpoint, KEY_ID, SECRET, INSTANCE, retry_policy=ts.NoRetryPolicy())
    yield Api(sdk, ts, srv)
    srv.stop()


def table(api, name=T, pk=(("PK0", "INTEGER"), ("PK1", "STRING")), split_points=None):
    lib = api.lib
    meta = lib.TableMeta(name, list(pk))
    rt = lib.ReservedThroughput(lib.CapacityUnit(0, 0))
    if split_points is None:
        api.c.create_table(meta, lib.TableOptions(), rt)
    elif api.embedded:
        api.c.create_table(meta, lib.TableOptions(), rt, split_points=split_points)
    else:
        api.c._create_table_ex(meta, lib.TableOptions(), rt, split_points=split_points)


def error(fn, *args, **kw):
    with pytest.raises((emb.OTSServiceError, ts.OTSServiceError)) as e:
        fn(*args, **kw)
    return e.value.get_http_status(), e.value.get_error_code(), e.value.get_error_message()


CONFLICT = (409, "OTSRowOperationConflict", "Data is being modified by the other request.")
INVALID_ID = (400, "OTSParameterInvalid", "TransactionID is invalid.")
NO_SESSION = (404, "OTSSessionNotExist", "Session not exist or may be timeout.")


def out_of_range(txn_key, data_key):
    return (400, "OTSDataOutOfRange", "Data out of scope of transaction. Transaction PartKey:%s. "
            "Data PartKey:%s" % (txn_key, data_key))


def value(api, pk=PK, tid=None, column="value"):
    row = api.c.get_row(T, pk, [column], None, 1, transaction_id=tid)[1]
    return row.attribute_columns[0][1] if row and row.attribute_columns else None


def rows(api, part=1, tid=None):
    lib = api.lib
    got = api.c.get_range(T, lib.Direction.FORWARD, [("PK0", part), ("PK1", lib.INF_MIN)],
                          [("PK0", part), ("PK1", lib.INF_MAX)], transaction_id=tid)[2]
    return {r.primary_key[1][1]: {n: v for n, v, _ in r.attribute_columns} for r in got}


def put(api, pk, cols, tid=None, expect=None):
    lib = api.lib
    cond = lib.Condition(expect or lib.RowExistenceExpectation.IGNORE)
    return api.c.put_row(T, lib.Row(pk, cols), cond, None, tid)


def batch(api, items, tid=None, name=T):
    request = api.lib.BatchWriteRowRequest()
    request.add(api.lib.TableInBatchWriteRowItem(name, items))
    if tid is not None:
        request.set_transaction_id(tid)
    return api.c.batch_write_row(request)


# ------------------------------------------------------- the vendor's flows

@pytest.mark.parametrize("end", ["commit", "abort"])
def test_put_update_batch_delete_in_a_transaction_then_commit_or_abort(api, end):
    lib = api.lib
    table(api)
    put(api, PK, [("value", "origin value")])
    put(api, [("PK0", 1), ("PK1", "gone")], [("value", "to delete")])
    tid = api.c.start_local_transaction(T, KEY)
    assert isinstance(tid, str) and tid
    put(api, PK, [("value", "new value")], tid)
    api.c.update_row(T, lib.Row(PK, {"PUT": [("batch", "b0")]}), lib.Condition("IGNORE"), None, tid)
    result = batch(api, [lib.UpdateRowItem(lib.Row([("PK0", 1), ("PK1", "more")],
                                                   {"put": [("value", "batch value")]}),
                                           lib.Condition("IGNORE"))], tid)
    assert result.is_all_succeed()
    api.c.delete_row(T, [("PK0", 1), ("PK1", "gone")], lib.Condition("IGNORE"), transaction_id=tid)
    mine = {"transaction": {"value": "new value", "batch": "b0"}, "more": {"value": "batch value"}}
    before = {"transaction": {"value": "origin value"}, "gone": {"value": "to delete"}}
    # reads inside see the transaction's writes; reads outside only committed data
    assert value(api, tid=tid) == "new value"
    assert rows(api, tid=tid) == mine
    assert value(api) == "origin value"
    assert rows(api) == before
    getattr(api.c, end + "_transaction")(tid)
    assert rows(api) == (mine if end == "commit" else before)
    # the id is spent
    assert error(api.c.commit_transaction, tid) == NO_SESSION
    assert error(api.c.abort_transaction, tid) == NO_SESSION
    assert error(put, api, PK, [("value", "late")], tid) == NO_SESSION


def test_conditions_and_increments_inside_see_the_transaction_view(api):
    lib = api.lib
    table(api)
    new = [("PK0", 1), ("PK1", "new")]
    tid = api.c.start_local_transaction(T, KEY)
    put(api, new, [("value", "v"), ("n", 1)], tid, lib.RowExistenceExpectation.EXPECT_NOT_EXIST)
    # the row exists in the view (not outside): EXPECT_EXIST passes, EXPECT_NOT_EXIST fails
    cond = lib.Condition(lib.RowExistenceExpectation.EXPECT_EXIST,
                         lib.SingleColumnCondition("value", "v", lib.ComparatorType.EQUAL))
    api.c.update_row(T, lib.Row(new, {"increment": [("n", 5)]}), cond, None, tid)
    api.c.update_row(T, lib.Row(new, {"increment": [("n", 5)]}), cond, None, tid)
    assert error(put, api, new, [("value", "w")], tid,
                 lib.RowExistenceExpectation.EXPECT_NOT_EXIST)[1] == "OTSConditionCheckFail"
    assert value(api, new, tid, "n") == 11
    assert value(api, new, None, "n") is None
    outside = lib.Condition(lib.RowExistenceExpectation.EXPECT_EXIST)
    api.c.delete_row(T, new, lib.Condition("IGNORE"), transaction_id=tid)
    assert error(api.c.update_row, T, lib.Row(new, {"put": [("x", 1)]}), outside, None,
                 tid)[1] == "OTSConditionCheckFail"
    put(api, new, [("n", 100)], tid)
    api.c.update_row(T, lib.Row(new, {"increment": [("n", 1)]}), None, None, tid)
    api.c.commit_transaction(tid)
    assert rows(api) == {"new": {"n": 101}}


# ----------------------------------------------------------------- locking

def test_the_partition_is_locked_against_outside_writes_and_other_transactions(api):
    lib = api.lib
    table(api)
    put(api, PK, [("value", "origin value")])
    tid = api.c.start_local_transaction(T, KEY)
    other = [("PK0", 1), ("PK1", "other row")]
    assert error(put, api, other, [("value", "x")]) == CONFLICT
    assert error(api.c.update_row, T, lib.Row(PK, {"put": [("value", "x")]}),
                 lib.Condition("IGNORE")) == CONFLICT
    assert error(api.c.delete_row, T, PK, lib.Condition("IGNORE")) == CONFLICT
    result = batch(api, [lib.PutRowItem(lib.Row(other, [("value", "x")]), lib.Condition("IGNORE")),
                         lib.PutRowItem(lib.Row([("PK0", 2), ("PK1", "a")], [("value", "y")]),
                                        lib.Condition("IGNORE"))])
    failed = result.get_failed_of_put()
    assert [(i.error_code, i.error_message) for i in failed] == [CONFLICT[1:]]
    assert len(result.get_succeed_of_put()) == 1
    assert error(api.c.start_local_transaction, T, KEY) == CONFLICT
    # other partition key values are free, and readers are never blocked
    tid2 = api.c.start_local_transaction(T, [("PK0", 2)])
    assert value(api) == "origin value"
    api.c.abort_transaction(tid2)
    api.c.commit_transaction(tid)
    put(api, other, [("value", "after")])
    assert rows(api) == {"transaction": {"value": "origin value"}, "other row": {"value": "after"}}
    api.c.abort_transaction(api.c.start_local_transaction(T, KEY))


def test_an_idle_transaction_expires_its_lock_and_writes_go_away(api):
    table(api)
    tid = api.c.start_local_transaction(T, KEY)
    for i in range(3):                       # activity keeps it alive past the timeout
        put(api, PK, [("value", "v%d" % i)], tid)
        time.sleep(TIMEOUT / 2)
    assert value(api, tid=tid) == "v2"
    time.sleep(TIMEOUT * 1.5)
    put(api, [("PK0", 1), ("PK1", "outside")], [("value", "free again")])   # lock released
    assert error(value, api, PK, tid) == NO_SESSION
    assert error(api.c.commit_transaction, tid) == NO_SESSION
    assert rows(api) == {"outside": {"value": "free again"}}
    # an expired transaction does not block a new one either
    tid = api.c.start_local_transaction(T, KEY)
    time.sleep(TIMEOUT * 1.5)
    api.c.abort_transaction(api.c.start_local_transaction(T, KEY))
    assert error(api.c.abort_transaction, tid) == NO_SESSION


# ----------------------------------------------------------- scope and ids

def test_rows_outside_the_partition_key_value_are_refused_and_the_transaction_survives(api):
    lib = api.lib
    table(api)
    table(api, "other")
    tid = api.c.start_local_transaction(T, KEY)
    two = [("PK0", 2), ("PK1", "a")]
    assert error(put, api, two, [("value", "x")], tid) == out_of_range(1, 2)
    assert error(api.c.get_row, T, two, transaction_id=tid) == out_of_range(1, 2)
    assert error(api.c.get_range, T, lib.Direction.FORWARD, [("PK0", 1), ("PK1", lib.INF_MIN)],
                 [("PK0", 2), ("PK1", lib.INF_MIN)], transaction_id=tid) == out_of_range(1, 2)
    assert error(api.c.get_range, T, lib.Direction.BACKWARD, [("PK0", 1), ("PK1", lib.INF_MAX)],
                 [("PK0", lib.INF_MIN), ("PK1", lib.INF_MIN)],
                 transaction_id=tid) == out_of_range(1, "INF_MIN")
    assert error(api.c.get_row, "other", PK, transaction_id=tid)[1] == "OTSDataOutOfRange"
    result = batch(api, [lib.PutRowItem(lib.Row(PK, [("value", "in")]), lib.Condition("IGNORE")),
                         lib.PutRowItem(lib.Row(two, [("value", "out")]), lib.Condition("IGNORE"))],
                   tid)
    assert [i.is_ok for i in result.get_put()[0] + result.get_put()[1]] == [True, False]
    assert [(i.error_code, i.error_message) for i in result.get_failed_of_put()] == \
        [out_of_range(1, 2)[1:]]
    assert value(api, tid=tid) == "in"
    api.c.commit_transaction(tid)
    assert rows(api) == {"transaction": {"value": "in"}} and rows(api, 2) == {}


def test_ids_that_are_malformed_unknown_or_spent(api):
    table(api)
    for bad in ("", "not existed transaction id", "fake_transaction_id"):
        assert error(put, api, PK, [("value", "x")], bad) == INVALID_ID
        assert error(api.c.commit_transaction, bad) == INVALID_ID
        assert error(api.c.abort_transaction, bad) == INVALID_ID
    unknown = "0123456789ABCDEF0123456789ABCDEF"
    assert error(api.c.commit_transaction, unknown) == NO_SESSION
    assert error(value, api, PK, unknown) == NO_SESSION
    tid = api.c.start_local_transaction(T, KEY)
    api.c.abort_transaction(tid)
    assert error(api.c.commit_transaction, tid) == NO_SESSION
    assert rows(api) == {}


def test_start_takes_exactly_the_partition_key_column(api):
    table(api)
    assert error(api.c.start_local_transaction, T, PK) == (
        400, "OTSParameterInvalid", "StartLocalTransaction support only one primary key.")
    assert error(api.c.start_local_transaction, T, [("PK1", 1)]) == (
        400, "OTSInvalidPK", "Validate PK name fail. Input: PK1, Meta: PK0.")
    assert error(api.c.start_local_transaction, T, [("PK0", "1")])[1] == "OTSInvalidPK"
    assert error(api.c.start_local_transaction, "nope", KEY)[:2] == (404, "OTSObjectNotExist")
    table(api, "auto", [("PK0", "INTEGER"), ("PK1", "INTEGER", api.lib.PK_AUTO_INCR)])
    assert error(api.c.start_local_transaction, "auto", KEY)[:2] == (400, "OTSParameterInvalid")


def test_data_per_transaction_is_limited_to_4_mb(api):
    table(api)
    big = "x" * (1500 * 1024)
    tid = api.c.start_local_transaction(T, KEY)
    put(api, [("PK0", 1), ("PK1", "a")], [("value", big)], tid)
    put(api, [("PK0", 1), ("PK1", "b")], [("value", big)], tid)
    status, code, message = error(put, api, [("PK0", 1), ("PK1", "c")], [("value", big)], tid)
    assert (status, code) == (400, "OTSOutOfTransactionDataSizeLimit")
    assert str(MAX_BYTES) in message
    put(api, [("PK0", 1), ("PK1", "d")], [("value", "small")], tid)     # still valid
    api.c.commit_transaction(tid)
    assert sorted(rows(api)) == ["a", "b", "d"]


# ---------------------------------------------------- embedded-only rules

def test_the_view_merges_buffered_entries_over_committed_ones_in_both_directions():
    from regions.tablestore.transactions import _merge
    rnd = random.Random(3)
    for _ in range(200):
        committed = {bytes([rnd.randrange(20)]): b"c" for _ in range(rnd.randrange(10))}
        mine = {bytes([rnd.randrange(20)]): rnd.choice([b"m", None])
                for _ in range(rnd.randrange(10))}
        want = dict(committed)
        for k, v in mine.items():
            if v is None:
                want.pop(k, None)
            else:
                want[k] = v
        for reverse in (False, True):
            got = list(_merge(sorted(committed.items(), reverse=reverse),
                              sorted(mine.items(), reverse=reverse), reverse))
            assert got == sorted(want.items(), reverse=reverse)


def test_a_commit_is_one_atomic_write_of_one_region(tmp_path, monkeypatch):
    c = emb.OTSClient(str(tmp_path / "d"))
    c.create_table(emb.TableMeta(T, [("PK0", "INTEGER"), ("PK1", "STRING")]),
                   split_points=[0, 5, 10])
    tid = c.start_local_transaction(T, [("PK0", 7)])
    for i in range(20):
        c.put_row(T, emb.Row([("PK0", 7), ("PK1", "r%02d" % i)], [("v", i)]), None, None, tid)
    c.update_row(T, emb.Row([("PK0", 7), ("PK1", "r00")], {"increment": [("v", 10)]}), None,
                 None, tid)
    calls = []
    real = c._server.write
    monkeypatch.setattr(c._server, "write",
                        lambda name, pairs, sync=None: (calls.append(list(pairs)),
                                                         real(name, pairs, sync)))
    c.commit_transaction(tid)
    # 20 heads, the INCREMENT's delta and its EXISTS delta (cells.py), in one write
    assert len(calls) == 1 and len(calls[0]) == 22
    region = [r for r in c._server.regions(T) if r.start_key and r.start_key <= calls[0][0][0]][-1]
    assert all(region.start_key <= key < region.end_key for key, _ in calls[0])
    got = c.get_range(T, "FORWARD", [("PK0", 7), ("PK1", emb.INF_MIN)],
                      [("PK0", 7), ("PK1", emb.INF_MAX)])[2]
    assert [r.attribute_columns[0][1] for r in got] == [10] + list(range(1, 20))
    c.close()


def test_a_transaction_serves_one_request_at_a_time_and_dies_with_its_table(tmp_path):
    c = emb.OTSClient(str(tmp_path / "d"))
    c.create_table(emb.TableMeta(T, [("PK0", "INTEGER"), ("PK1", "STRING")]))
    tid = c.start_local_transaction(T, KEY)
    with c._transactions.use(tid):           # a request of this transaction in flight
        with pytest.raises(emb.OTSServiceError) as e:
            c.put_row(T, emb.Row(PK, [("v", 1)]), None, None, tid)
        assert (e.value.code, e.value.http_status) == ("OTSSessionBusy", 409)
        with pytest.raises(emb.OTSServiceError) as e:
            c.commit_transaction(tid)
        assert e.value.code == "OTSSessionBusy"
    c.put_row(T, emb.Row(PK, [("v", 1)]), None, None, tid)
    assert c._transactions.open_ids() == [tid]
    c.delete_table(T)
    assert c._transactions.open_ids() == []
    with pytest.raises(emb.OTSServiceError) as e:
        c.commit_transaction(tid)
    assert e.value.code == "OTSSessionNotExist"
    with pytest.raises(ValueError):
        emb.OTSClient(str(tmp_path / "e"), transaction_timeout=0)
    c.close()


def test_outside_writers_racing_transactions_never_slip_into_a_locked_partition(tmp_path):
    """Writers bump a counter outside transactions while transactions read it,
    add 1000 and commit; every increment is either refused (conflict) or
    counted, none is lost between a transaction's read and its commit."""
    c = emb.OTSClient(str(tmp_path / "d"))
    c.create_table(emb.TableMeta(T, [("PK0", "INTEGER"), ("PK1", "STRING")]))
    key = [("PK0", 1), ("PK1", "n")]
    c.put_row(T, emb.Row(key, [("n", 0)]))
    done = []
    stop = threading.Event()

    def writer():
        ok = 0
        while not stop.is_set():
            try:
                c.update_row(T, emb.Row(key, {"increment": [("n", 1)]}), None)
                ok += 1
            except emb.OTSServiceError as e:
                assert e.code == "OTSRowOperationConflict"
        done.append(ok)

    threads = [threading.Thread(target=writer) for _ in range(3)]
    for t in threads:
        t.start()
    commits = 0
    while commits < 40:
        try:
            tid = c.start_local_transaction(T, KEY)
        except emb.OTSServiceError:
            continue
        n = c.get_row(T, key, transaction_id=tid)[1].attribute_columns[0][1]
        time.sleep(0.001)
        c.put_row(T, emb.Row(key, [("n", n + 1000)]), None, None, tid)
        c.commit_transaction(tid)
        commits += 1
    stop.set()
    for t in threads:
        t.join()
    assert c.get_row(T, key)[1].attribute_columns[0][1] == 40 * 1000 + sum(done)
    c.close()


# ------------------------------------------------------------------- crash

CHILD = r'''
import sys
from regions.tablestore import OTSClient, Row, TableMeta
path, parts, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c = OTSClient(path)
if "t" not in c.list_table():
    c.create_table(TableMeta("t", [("p", "INTEGER"), ("r", "INTEGER")]), split_points=[2, 4])
start = 0                     # resume after the last commit a previous run made
for p in range(parts):
    row = c.get_row("t", [("p", p), ("r", -1)])[1]
    if row is not None:
        start = max(start, {n: v for n, v, _ in row.attribute_columns}["commit"] + 1)
for i in range(start, start + 1000000):
    p = i % parts
    tid = c.start_local_transaction("t", [("p", p)])
    for r in range(rows):
        c.put_row("t", Row([("p", p), ("r", r)], [("commit", i), ("pad", "x" * 200)]),
                  None, None, tid)
    c.update_row("t", Row([("p", p), ("r", -1)], {"increment": [("count", 1)],
                                                  "put": [("commit", i)]}), None, None, tid)
    sys.stdout.write("S %d\n" % i)
    sys.stdout.flush()
    c.commit_transaction(tid)
    sys.stdout.write("C %d\n" % i)
    sys.stdout.flush()
'''


def test_a_crash_in_a_stream_of_commits_leaves_each_transaction_whole_or_absent(tmp_path):
    """Each commit writes ROWS rows and bumps a counter row in one partition key
    value; after a SIGKILL at a random moment, every partition shows exactly
    one commit in all its rows, its counter agrees, and that commit is the last
    acknowledged one or the one in flight."""
    from regions.tablestore import OTSClient
    path, parts, nrows = str(tmp_path / "srv"), 6, 8
    for round_ in range(3):
        p = subprocess.Popen([sys.executable, "-c", CHILD, path, str(parts), str(nrows)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(random.Random(round_).uniform(0.8, 1.8))
        os.kill(p.pid, signal.SIGKILL)
        out, err = p.communicate(timeout=60)
        assert p.returncode == -signal.SIGKILL, err.decode()[-2000:]
        started, committed = {}, {}
        for line in out.decode().splitlines():
            parts_ = line.split(" ")
            if len(parts_) == 2 and parts_[1].isdigit():
                i = int(parts_[1])
                (started if parts_[0] == "S" else committed)[i % parts] = i
        assert committed, err.decode()[-2000:]
        c = OTSClient(path)
        for part in range(parts):
            got = c.get_range("t", "FORWARD", [("p", part), ("r", emb.INF_MIN)],
                              [("p", part), ("r", emb.INF_MAX)])[2]
            if part not in started and part not in committed and not got:
                continue
            cols = [{n: v for n, v, _ in r.attribute_columns} for r in got]
            assert len(cols) == nrows + 1, (part, cols)
            seen = {col["commit"] for col in cols}
            assert len(seen) == 1, (part, seen)          # never a partly visible commit
            (last,) = seen
            if part in started:
                assert last in (committed.get(part), started[part]), (part, last)
            assert cols[0]["count"] == last // parts + 1, (part, cols[0])
        c.close()


def test_a_table_made_with_local_transactions_off_refuses_them():
    from regions.tablestore import (CapacityUnit, OTSClient, OTSServiceError, ReservedThroughput,
                                    TableMeta, TableOptions)
    with OTSClient(None) as c:
        c.create_table(TableMeta("off", [("pk", "STRING")]), TableOptions(),
                       ReservedThroughput(CapacityUnit(0, 0)), enable_local_txn=False)
        c.create_table(TableMeta("on", [("pk", "STRING")]), TableOptions(),
                       ReservedThroughput(CapacityUnit(0, 0)))
        for table, message in (("off", "Try to call method using explicit transaction on "
                                       "explicit-transaction-disabled table."),
                               ("", "Invalid table name: ''.")):
            try:
                c.start_local_transaction(table, [("pk", "a")])
                raise AssertionError("not refused")
            except OTSServiceError as e:
                assert (e.code, e.message) == ("OTSParameterInvalid", message)
        assert c.start_local_transaction("on", [("pk", "a")])
