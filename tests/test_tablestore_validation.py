"""The service's validation rules, on the embedded client and over the wire.

Every test runs twice: on ``regions.tablestore.OTSClient`` (embedded) and on
the official SDK 6.4.8 talking to ``regions-server`` (wire).  Each refused
request gets the service's status, code and message and changes nothing;
batches report every row, whatever goes wrong in another.
"""
import logging
import time

import pytest
import tablestore as ts

import regions.tablestore as emb

logging.getLogger("tablestore").addHandler(logging.NullHandler())
logging.getLogger("tablestore").setLevel(logging.CRITICAL)

P = (400, "OTSParameterInvalid")
PK = [("PK1", 1), ("PK2", "a")]
INT64_MAX = (1 << 63) - 1
T0 = (int(time.time()) - 3600) * 1000  # inside the default 1-day deviation


class Env:
    """A client (embedded or SDK), the module its classes come from, and the
    embedded client that serves it (to inject faults)."""

    def __init__(self, client, lib, core):
        self.client, self.lib, self.core = client, lib, core


@pytest.fixture(params=["embedded", "wire"])
def env(request):
    """The table "t" behind the embedded API or the SDK (the plugin's fixtures)."""
    if request.param == "embedded":
        client = request.getfixturevalue("ots_client")
        e = Env(client, emb, client)
    else:
        srv = request.getfixturevalue("ots_server")
        e = Env(srv.client(), ts, srv.embedded)
    _create(e)
    return e


def _create(e):
    L = e.lib
    e.client.create_table(L.TableMeta("t", [("PK1", "INTEGER"), ("PK2", "STRING")]),
                          L.TableOptions(max_version=3), L.ReservedThroughput(L.CapacityUnit(0, 0)))
    e.client.put_row("t", L.Row(PK, [("a", 1), ("n", INT64_MAX - 1)]))


def snapshot(e):
    """Everything a refused request must leave as it was."""
    L = e.lib
    lo = [("PK1", L.INF_MIN), ("PK2", L.INF_MIN)]
    hi = [("PK1", L.INF_MAX), ("PK2", L.INF_MAX)]
    rows = e.client.get_range("t", "FORWARD", lo, hi, max_version=10)[2]
    desc = e.client.describe_table("t")
    cu = desc.reserved_throughput_details.capacity_unit
    return (e.client.list_table(), (cu.read, cu.write),
            [(r.primary_key, r.attribute_columns) for r in rows])


def refused(e, call, status, code, message, error="service"):
    """``call`` fails with exactly this error and changes nothing."""
    before = snapshot(e)
    cls = e.lib.OTSServiceError if error == "service" else e.lib.OTSClientError
    with pytest.raises(cls) as info:
        call()
    if error == "service":
        assert (info.value.get_http_status(), info.value.get_error_code(),
                info.value.get_error_message()) == (status, code, message)
    else:
        assert info.value.get_error_message() == message
    assert snapshot(e) == before


def columns(e, pk=PK):
    row = e.client.get_row("t", pk, max_version=10)[1]
    return None if row is None else row.attribute_columns


def latest(e, name, pk=PK):
    return next(c[1] for c in columns(e, pk) if c[0] == name)


def batch(e, *items):
    req = e.lib.BatchWriteRowRequest()
    req.add(e.lib.TableInBatchWriteRowItem("t", list(items)))
    resp = e.client.batch_write_row(req)
    results = []
    for getter in (resp.get_put, resp.get_update, resp.get_delete):
        ok, failed = getter()
        results += ok + failed
    results.sort(key=lambda item: item.index)
    return [(r.is_ok, r.error_code, r.error_message) for r in results]


OK = (True, None, None)


# ------------------------------------------------------------ expectations

def test_update_and_delete_take_expect_not_exist(env):
    """EXPECT_NOT_EXIST on UpdateRow and DeleteRow (and their batch rows): a
    row that is there fails the condition and is left alone; a missing one
    passes (the update makes it; the delete of nothing costs a read for the
    check), as the Java SDK's CapacityUnitTest and DeleteRowTest see."""
    e, L = env, env.lib
    cond = L.Condition(L.RowExistenceExpectation.EXPECT_NOT_EXIST)
    failed = ("OTSConditionCheckFail", "Condition check failed.")
    refused(e, lambda: e.client.update_row("t", L.Row(PK, {"PUT": [("b", 1)]}), cond),
            403, *failed)
    refused(e, lambda: e.client.delete_row("t", L.Row(PK), cond), 403, *failed)
    missing = [("PK1", 2), ("PK2", "a")]
    consumed, _ = e.client.delete_row("t", L.Row(missing), cond)
    assert (consumed.read, consumed.write) == (1, 1)
    e.client.update_row("t", L.Row(missing, {"PUT": [("b", 2)]}), cond)
    assert [c[:2] for c in columns(e, missing)] == [("b", 2)]
    other = [("PK1", 3), ("PK2", "a")]
    assert batch(e, L.UpdateRowItem(L.Row(PK, {"PUT": [("b", 1)]}), cond),
                 L.DeleteRowItem(L.Row(missing), cond),          # there now
                 L.UpdateRowItem(L.Row(other, {"PUT": [("b", 3)]}), cond)) == [
        (False, *failed), (False, *failed), OK]
    assert columns(e)[0][:2] == ("a", 1) and len(columns(e)) == 2
    assert [c[:2] for c in columns(e, missing)] == [("b", 2)]
    assert [c[:2] for c in columns(e, other)] == [("b", 3)]


# --------------------------------------------------------------- INCREMENT

def test_increment_overflow_is_refused_and_changes_nothing(env):
    e, L = env, env.lib
    msg = "The result of INCREMENT exceeds the range of INTEGER. Cell:n."
    refused(e, lambda: e.client.update_row("t", L.Row(PK, {"INCREMENT": [("n", 2)]}), None),
            *P, msg)
    # the other cells of the same update are not written either
    refused(e, lambda: e.client.update_row("t", L.Row(PK, {"PUT": [("b", 1)],
                                                           "INCREMENT": [("n", 5)]}), None),
            *P, msg)
    e.client.update_row("t", L.Row(PK, {"INCREMENT": [("n", 1)]}), None)
    assert latest(e, "n") == INT64_MAX
    e.client.put_row("t", L.Row(PK, [("n", -INT64_MAX - 1)]))
    refused(e, lambda: e.client.update_row("t", L.Row(PK, {"INCREMENT": [("n", -1)]}), None),
            *P, msg)


def test_increment_with_a_timestamp_is_refused(env):
    e, L = env, env.lib
    refused(e, lambda: e.client.update_row("t", L.Row(PK, {"INCREMENT": [("n", 1, T0)]}), None),
            *P, "Timestamp cannot be given when type is INCREMENT. Cell:n.")


@pytest.mark.parametrize("update", [
    {"PUT": [("c", 1)], "INCREMENT": [("c", 1)]},
    {"INCREMENT": [("c", 1), ("c", 2)]},
], ids=["put+increment", "increment twice"])
def test_an_increment_shares_its_column_with_no_other_cell(env, update):
    e, L = env, env.lib
    refused(e, lambda: e.client.update_row("t", L.Row(PK, update), None), *P,
            "Duplicated attribute column name: 'c' while updating row.")


@pytest.mark.parametrize("update, after", [
    ({"PUT": [("c", 1), ("c", 2)]}, [2]),
    ({"PUT": [("c", 1, T0), ("c", 2, T0)]}, [2]),
    ({"PUT": [("c", 1)], "DELETE_ALL": ["c"]}, []),
    ({"PUT": [("c", 1, T0)], "DELETE": [("c", None, T0)]}, []),
    ({"DELETE_ALL": ["c", "c"]}, []),
], ids=["put twice no ts", "put twice same ts", "put+delete_all", "put+delete same version",
        "delete_all twice"])
def test_a_column_named_twice_in_one_update_applies_its_cells_in_order(env, update, after):
    """The service takes them, the last PUT of a version winning (the Java
    SDK's APITest.testCase5, OTSAPIBehaviorTest, UpdateRowTest)."""
    e, L = env, env.lib
    e.client.update_row("t", L.Row(PK, update), None)
    assert [x[1] for x in columns(e) if x[0] == "c"] == after


def test_versions_of_one_column_in_one_update_are_a_multi_version_write(env):
    e, L = env, env.lib
    e.client.update_row("t", L.Row(PK, {"PUT": [("c", 1, T0), ("c", 2, T0 + 1)]}), None)
    assert [x for x in columns(e) if x[0] == "c"] == [("c", 2, T0 + 1), ("c", 1, T0)]
    e.client.update_row("t", L.Row(PK, {"DELETE": [("c", None, T0), ("c", None, T0 + 1)]}), None)
    assert [x for x in columns(e) if x[0] == "c"] == []


# ------------------------------------------------------------------ limits

def test_a_put_or_update_over_4_mb_is_refused(env):
    e, L = env, env.lib
    big = "x" * (2 << 20)  # each value at its own 2 MB limit
    # PK1 3+8, PK2 3+1, a 1+2 MB, b 1+2 MB
    size = 15 + 2 * (1 + (2 << 20))
    refused(e, lambda: e.client.put_row("t", L.Row(PK, [("a", big), ("b", big)])), *P,
            "The total data size of PutRow request exceeds the limit, limit size: 4194304 , "
            "data size: %d." % size)
    refused(e, lambda: e.client.update_row("t", L.Row(PK, {"PUT": [("a", big), ("b", big)]}),
                                           None), *P,
            "The total data size of UpdateRow request exceeds the limit, limit size: 4194304 , "
            "data size: %d." % size)
    e.client.put_row("t", L.Row(PK, [("a", big), ("b", "y" * 4000)]))  # under the limit


def test_strings_given_as_bytes_must_be_utf8(env):
    e, L = env, env.lib
    bad = b"\xff\xfeab"
    msg = "Value of column %s must be UTF8 encoding."
    refused(e, lambda: e.client.put_row("t", L.Row(PK, [("a", bad)])), *P, msg % "a")
    refused(e, lambda: e.client.update_row("t", L.Row(PK, {"PUT": [("b", bad)]}), None), *P,
            msg % "b")
    bad_pk = [("PK1", 1), ("PK2", b"\xc3")]
    refused(e, lambda: e.client.put_row("t", L.Row(bad_pk, [("a", 1)])), *P, msg % "PK2")
    refused(e, lambda: e.client.get_row("t", bad_pk), *P, msg % "PK2")
    # valid UTF-8 bytes are a STRING and read back as str
    e.client.put_row("t", L.Row([("PK1", 1), ("PK2", "é".encode())], [("a", "ü".encode())]))
    assert columns(e, [("PK1", 1), ("PK2", "é")])[0][:2] == ("a", "ü")


def test_more_than_one_auto_increment_column_is_refused(env):
    e, L = env, env.lib
    meta = L.TableMeta("n", [("a", "INTEGER"), ("b", "INTEGER", L.PK_AUTO_INCR),
                             ("c", "INTEGER", L.PK_AUTO_INCR)])
    rt = L.ReservedThroughput(L.CapacityUnit(0, 0))
    refused(e, lambda: e.client.create_table(meta, L.TableOptions(), rt), *P,
            "AUTO_INCREMENT primary key count must <= 1.")


@pytest.mark.parametrize("read,write,message", [
    (100001, 0, "Invalid Capacity Unit:100001 . Capacity Unit must be at most 100000."),
    (0, 100001, "Invalid Capacity Unit:100001 . Capacity Unit must be at most 100000."),
    (-1, 0, "Invalid Capacity Unit:-1 . Capacity Unit must be nonnegative."),
])
def test_reserved_cu_outside_0_to_100000_is_refused(env, read, write, message):
    e, L = env, env.lib
    meta = L.TableMeta("n", [("a", "INTEGER")])
    refused(e, lambda: e.client.create_table(
        meta, L.TableOptions(), L.ReservedThroughput(L.CapacityUnit(read, write))), *P, message)
    refused(e, lambda: e.client.update_table(
        "t", reserved_throughput=L.ReservedThroughput(L.CapacityUnit(read, write))), *P, message)
    refused(e, lambda: e.client.update_table(
        "t", reserved_throughput=L.ReservedThroughput(L.CapacityUnit(None, write or read))),
        *P, message)


def test_reserved_cu_at_the_limits_is_accepted(env):
    e, L = env, env.lib
    e.client.create_table(L.TableMeta("n", [("a", "INTEGER")]), L.TableOptions(),
                          L.ReservedThroughput(L.CapacityUnit(100000, 0)))
    e.client.update_table("t", reserved_throughput=L.ReservedThroughput(L.CapacityUnit(0, 100000)))
    cu = e.client.describe_table("t").reserved_throughput_details.capacity_unit
    assert (cu.read, cu.write) == (0, 100000)


def test_get_range_checks_the_direction_before_the_table(env):
    # The SDK refuses a bad direction client-side, before any table lookup.
    e = env
    refused(e, lambda: e.client.get_range("zz", "SIDEWAYS", PK, PK), None, None,
            "direction should be one of [FORWARD, BACKWARD], not SIDEWAYS", error="client")


# ----------------------------------------------------------------- batches

def test_every_row_of_a_batch_gets_its_own_result(env):
    e, L = env, env.lib
    pk = lambda i: [("PK1", 10 + i), ("PK2", "b")]  # noqa: E731
    items = [
        L.PutRowItem(L.Row(pk(0), [("a", 0)]), None),
        L.UpdateRowItem(L.Row(PK, {"INCREMENT": [("n", 5)]}), None),            # overflow
        L.PutRowItem(L.Row(pk(2), [("a", 2)]), None),
        L.UpdateRowItem(L.Row(pk(3), {"PUT": [("a", 3)]}),
                        L.Condition(L.RowExistenceExpectation.EXPECT_EXIST)),   # condition
        L.PutRowItem(L.Row(pk(4), [("a", b"\xff")]), None),                   # not UTF-8
        L.DeleteRowItem(L.Row(pk(5)),
                        L.Condition(L.RowExistenceExpectation.EXPECT_NOT_EXIST)),
        L.UpdateRowItem(L.Row(pk(6), {"PUT": [("a", 6)], "DELETE_ALL": ["a"]}), None),
        L.UpdateRowItem(L.Row(pk(7), {"INCREMENT": [("n", 7)]}), None),
    ]
    before = columns(e)
    assert batch(e, *items) == [
        OK,
        (False, "OTSParameterInvalid", "The result of INCREMENT exceeds the range of INTEGER. "
                                       "Cell:n."),
        OK,
        (False, "OTSConditionCheckFail", "Condition check failed."),
        (False, "OTSParameterInvalid", "Value of column a must be UTF8 encoding."),
        OK,                                    # EXPECT_NOT_EXIST of a missing row
        OK,                                    # a PUT then a DELETE_ALL of one column
        OK,
    ]
    assert columns(e) == before
    assert [columns(e, pk(i)) and [c[:2] for c in columns(e, pk(i))] for i in range(8)] == [
        [("a", 0)], None, [("a", 2)], None, None, None, [], [("n", 7)]]


def test_a_fault_in_one_row_of_a_batch_is_that_rows_error(env, monkeypatch):
    # Not a service error (a bug, a disk error): the row reports
    # OTSInternalServerError, the rows before and after it are written and
    # reported, and no exception leaves the batch half-applied.
    e, L = env, env.lib
    pk = lambda i: [("PK1", 10 + i), ("PK2", "b")]  # noqa: E731
    row_ops = e.core._writer._row_ops

    def faulty(p, schema, now):
        if p.pk_values == [11, "b"]:
            raise OSError("disk on fire")
        return row_ops(p, schema, now)

    monkeypatch.setattr(e.core._writer, "_row_ops", faulty)
    # the fault is in the Python writer: plain puts would take the C path
    # (_writes.PlainWriter, whose failed write is tested in test_tablestore_rows_c)
    monkeypatch.setattr(e.core._writer, "c_path", None)
    logging.getLogger("regions.tablestore").disabled = True
    try:
        results = batch(e, *[L.PutRowItem(L.Row(pk(i), [("a", i)]), None) for i in range(3)])
    finally:
        logging.getLogger("regions.tablestore").disabled = False
    assert results == [OK, (False, "OTSInternalServerError", "Internal server error."), OK]
    assert [columns(e, pk(i)) and columns(e, pk(i))[0][:2] for i in range(3)] == [
        ("a", 0), None, ("a", 2)]


def test_an_empty_table_entry_in_batch_write_is_refused(env):
    e, L = env, env.lib
    refused(e, lambda: batch(e), *P, "No operation is specified for table: 't'.")
    refused(e, lambda: e.client.batch_write_row(L.BatchWriteRowRequest()), *P,
            "No row is specified in BatchWriteRow.")


def test_batch_get_entry_without_keys_succeeds_with_no_rows(env):
    e, L = env, env.lib
    e.client.create_table(L.TableMeta("u", [("k", "INTEGER")]), L.TableOptions(),
                          L.ReservedThroughput(L.CapacityUnit(0, 0)))
    req = L.BatchGetRowRequest()
    req.add(L.TableInBatchGetRowItem("u", [], [], None, 1))
    resp = e.client.batch_get_row(req)
    assert resp.get_result_by_table("u") == [] and resp.is_all_succeed()
    req.add(L.TableInBatchGetRowItem("t", [PK], [], None, 1))
    resp = e.client.batch_get_row(req)
    assert resp.get_result_by_table("u") == []
    assert [r.row.attribute_columns[0][:2] for r in resp.get_result_by_table("t")] == [("a", 1)]
    refused(e, lambda: e.client.batch_get_row(L.BatchGetRowRequest()), *P,
            "No row specified in the request of BatchGetRow.")


# ------------------------------------------------------------- constructor

def test_client_rejects_an_unknown_keyword_and_names_it(tmp_path):
    with pytest.raises(TypeError, match="'server_option'"):
        emb.OTSClient(str(tmp_path / "a"), server_option=None)
    assert not (tmp_path / "a").exists()  # refused before opening anything


def test_client_accepts_and_ignores_the_sdks_connection_arguments(tmp_path):
    with emb.OTSClient(str(tmp_path / "a"), "ak", "sk", "inst", None, "cn-hangzhou",
                       sts_token="t", sign_date="20250101", auto_update_v4_sign=True,
                       encoding="utf8", socket_timeout=5, max_connection=2, logger_name="x",
                       retry_policy=ts.NoRetryPolicy(), ssl_version=None, extra_headers={},
                       enable_native=False, native_fallback=True, keepalive_timeout=1,
                       force_close=True) as c:
        assert c.list_table() == ()


def test_a_put_and_a_delete_of_another_version_in_one_update_as_the_vendors_example(env):
    """examples/update_row.py of the SDK: PUT address and DELETE one older version of it."""
    e, L = env, env.lib
    e.client.put_row("t", L.Row(PK, [("address", "China", T0)]))
    e.client.update_row("t", L.Row(PK, {"PUT": [("address", "Hongkong", T0 + 2)],
                                        "DELETE": [("address", None, T0)]}), None)
    row = e.client.get_row("t", PK, max_version=5)[1]
    assert [(n, v) for n, v, _ in row.attribute_columns] == [("address", "Hongkong")]


def test_attribute_names_beyond_the_documented_rule_as_the_vendors_example(env):
    """examples/get_row.py of the SDK writes the column 'postal code'; control
    characters stay refused (the row layout separates names with 0x00/0x01)."""
    e, L = env, env.lib
    e.client.put_row("t", L.Row(PK, [("postal code", 310000), ("zip-code", "x")]))
    row = e.client.get_row("t", PK, ["postal code"])[1]
    assert [(n, v) for n, v, _ in row.attribute_columns] == [("postal code", 310000)]
    refused(e, lambda: e.client.put_row("t", L.Row(PK, [("a\x01b", 1)])), *P,
            "Invalid column name: 'a\x01b'.")


@pytest.mark.parametrize("name", ["a-b", "x y", "1st"])
def test_each_kind_of_name_keeps_its_own_rule_whatever_was_checked_before(env, name):
    """An attribute column may be named beyond the documented rule; a table, a
    primary-key column and a predefined column may not, even once the name
    was written as an attribute (no memo of good names is shared by kinds)."""
    e, L = env, env.lib
    e.client.put_row("t", L.Row(PK, [(name, 1)]))          # an attribute: accepted
    assert latest(e, name) == 1
    rt, opts = L.ReservedThroughput(L.CapacityUnit(0, 0)), L.TableOptions()
    refused(e, lambda: e.client.create_table(L.TableMeta(name, [("k", "INTEGER")]), opts, rt),
            *P, "Invalid table name: '%s'." % name)
    refused(e, lambda: e.client.create_table(L.TableMeta("u", [(name, "INTEGER")]), opts, rt),
            *P, "Invalid column name: '%s'." % name)
    refused(e, lambda: e.client.create_table(
        L.TableMeta("u", [("k", "INTEGER")], [(name, "INTEGER")]), opts, rt),
        *P, "Invalid column name: '%s'." % name)
    # and the other way round: a good table name is still a good attribute name
    e.client.create_table(L.TableMeta("good_name", [("k", "INTEGER")]), opts, rt)
    e.client.put_row("t", L.Row(PK, [("good_name", 2)]))
    assert latest(e, "good_name") == 2


def test_a_write_of_more_than_1024_attribute_columns_is_refused(env):
    """The service's limit of 1,024 columns a write, counted as the cells the
    request gives (the .NET SDK's tests: 1,025 columns, and 1,000 puts with
    1,000 deletes, "column count: 2000")."""
    e, L = env, env.lib
    many = [("c%d" % i, i) for i in range(1025)]

    def too_many(count):
        return ("The number of attribute columns exceeds the limit, limit count: 1024, "
                "column count: %d." % count)
    refused(e, lambda: e.client.put_row("t", L.Row(PK, many)), *P, too_many(1025))
    refused(e, lambda: e.client.update_row("t", L.Row(PK, {"PUT": many}), None), *P,
            too_many(1025))
    refused(e, lambda: e.client.update_row("t", L.Row(PK, {"PUT": many[:1000], "DELETE_ALL": [
        "d%d" % i for i in range(1000)]}), None), *P, too_many(2000))
    # 1,024 is within the limit
    e.client.put_row("t", L.Row(PK, many[:1024]))
    assert len(columns(e)) == 1024
    e.client.update_row("t", L.Row(PK, {"PUT": [(n, v + 1) for n, v in many[:1024]]}), None)
    assert latest(e, "c1023") == 1024
    # in a batch, the whole batch fails and nothing is written (the Java SDK's
    # RestrictedItemTest.testCase41 expects BatchWriteRow itself to fail)
    other = [("PK1", 2), ("PK2", "b")]
    request = L.BatchWriteRowRequest()
    request.add(L.TableInBatchWriteRowItem("t", [
        L.PutRowItem(L.Row(other, [("a", 1)]), L.Condition("IGNORE")),
        L.UpdateRowItem(L.Row(PK, {"PUT": many}), L.Condition("IGNORE"))]))
    refused(e, lambda: e.client.batch_write_row(request), *P, too_many(1025))


def test_a_row_incremented_in_a_batch_is_refused_if_it_is_written_twice_there(env):
    """The atomic counter notes: "if you perform an atomic counter operation on
    a row, you can perform only one update operation on the row in a
    BatchWriteRow request".  Each write of such a row fails; the rest of the
    batch is written."""
    e, L = env, env.lib
    other = [("PK1", 2), ("PK2", "b")]
    repeated = (False, "OTSParameterInvalid",
                "Repeated rows do not support increment in BatchModify.")
    increment = L.UpdateRowItem(L.Row(PK, {"INCREMENT": [("a", 1)]}), None)
    before = columns(e)
    for again in (L.UpdateRowItem(L.Row(PK, {"PUT": [("b", 1)]}), None),
                  L.UpdateRowItem(L.Row(PK, {"INCREMENT": [("c", 1)]}), None),
                  L.PutRowItem(L.Row(PK, [("b", 1)]), None),
                  L.DeleteRowItem(L.Row(PK), None)):
        assert batch(e, increment, L.PutRowItem(L.Row(other, [("x", 1)]), None), again) == [
            repeated, OK, repeated]
        assert columns(e) == before
    # once in the batch, with other rows incremented too: written
    assert batch(e, increment, L.UpdateRowItem(L.Row(other, {"INCREMENT": [("x", 1)]}), None)) \
        == [OK, OK]
    assert latest(e, "a") == 2 and latest(e, "x", other) == 2
    # a row written twice without an increment: both writes, as before
    assert batch(e, L.UpdateRowItem(L.Row(PK, {"PUT": [("b", 1)]}), None),
                 L.UpdateRowItem(L.Row(PK, {"PUT": [("c", 2)]}), None)) == [OK, OK]
    assert (latest(e, "b"), latest(e, "c")) == (1, 2)


@pytest.mark.parametrize("pk_type, points, message", [
    ("INTEGER", [1, INT64_MAX], "The value of partition range can not be INT64_MIN or INT64_MAX."),
    ("INTEGER", [-INT64_MAX - 1, 5], "The value of partition range can not be INT64_MIN or "
                                     "INT64_MAX."),
    ("STRING", ["", "b"], "The value of partition range can not be empty string."),
    ("BINARY", [bytearray(b"")], "The value of partition range can not be empty binary."),
])
def test_split_points_the_service_refuses(env, pk_type, points, message):
    """The service's checks of pre-split points (the Java SDK's SplitPointTest);
    more than 10 partitions are taken unless the client is made with
    max_partitions (ours: pre-splitting is how a keyspace is loaded here)."""
    e, L = env, env.lib
    create = getattr(e.client, "_create_table_ex", None) or e.client.create_table   # the SDK's
    with pytest.raises(L.OTSServiceError) as info:
        create(L.TableMeta("sp", [("p", pk_type)]), L.TableOptions(),
               L.ReservedThroughput(L.CapacityUnit(0, 0)), split_points=points)
    assert (info.value.get_error_code(), info.value.get_error_message()) == \
        ("OTSParameterInvalid", message)
    assert "sp" not in e.client.list_table()


def test_a_split_point_longer_than_64_bytes_is_refused():
    with emb.OTSClient(None) as c:
        with pytest.raises(emb.OTSServiceError) as info:
            c.create_table(emb.TableMeta("sp", [("p", "STRING")]), emb.TableOptions(),
                           emb.ReservedThroughput(emb.CapacityUnit(0, 0)), split_points=["x" * 65])
        assert info.value.message == ("The value of partition range exceeds the MaxLength:64 "
                                      "with CurrentLength:65.")
        c.create_table(emb.TableMeta("sp", [("p", "INTEGER")]), emb.TableOptions(),
                       emb.ReservedThroughput(emb.CapacityUnit(0, 0)),
                       split_points=list(range(1, 40)))            # more than the service's 10
        assert len(c.describe_table("sp").shard_splits) == 39
