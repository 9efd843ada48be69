"""The official SDK, unchanged, against a server on a free loopback port.

Every operation, sync and async clients, V2 and V4 signing, conditions,
filters, versions, partial batch failures, paging, errors, bad requests, and
parity with the embedded client (same rows, same capacity units).
"""
import asyncio
import http.client
import logging
import time

import pytest
import tablestore as ts
from tablestore.auth import RequestContext, SignV2
from tablestore.credentials import Credentials
from tablestore.protobuf import table_store_pb2 as pb
from tablestore.protocol import OTSProtocol

import regions.tablestore as emb
from regions.otsserver.auth import v2_signature
from regions.otsserver.cli import make_server
from regions.otsserver.convert import CODEC

logging.getLogger("tablestore").addHandler(logging.NullHandler())
logging.getLogger("tablestore").setLevel(logging.CRITICAL)

KEY_ID, SECRET, INSTANCE = "ak", "sk", "inst"
PK_SCHEMA = [("gid", "INTEGER"), ("uid", "STRING")]
T0 = (int(time.time()) - 3600) * 1000  # inside the default 1-day deviation


@pytest.fixture
def server(tmp_path):
    srv = make_server(str(tmp_path / "data"), "127.0.0.1", 0, INSTANCE, KEY_ID, SECRET).start()
    yield srv
    srv.stop()


def sdk(srv, v4=False, secret=SECRET):
    kw = {"region": "cn-local"} if v4 else {}
    return ts.OTSClient(srv.endpoint, KEY_ID, secret, INSTANCE,
                        retry_policy=ts.NoRetryPolicy(), **kw)


def create(client, name="t", max_version=1, split_points=None, lib=ts):
    meta = lib.TableMeta(name, PK_SCHEMA)
    opts = lib.TableOptions(max_version=max_version)
    rt = lib.ReservedThroughput(lib.CapacityUnit(0, 0))
    if split_points is None:
        client.create_table(meta, opts, rt)
    elif lib is ts:
        client._create_table_ex(meta, opts, rt, split_points=split_points)
    else:
        client.create_table(meta, opts, rt, split_points=split_points)


def raw_post(srv, api, body, extra=None, sign_extra=True):
    """POST ``body`` signed by the SDK's code; ``extra`` x-ots headers added
    (and signed too, unless not ``sign_extra``)."""
    proto = OTSProtocol(INSTANCE, "utf8", logging.getLogger("t"))
    headers = proto._make_request_headers(body, "/" + api, SignV2("utf8"),
                                          RequestContext(Credentials(KEY_ID, SECRET)))
    if extra:
        headers = {k.lower(): v for k, v in headers.items()}
        headers.update(extra)
        if sign_extra:
            headers["x-ots-signature"] = v2_signature(SECRET, api, headers)
    conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=10)
    conn.request("POST", "/" + api, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data


def error_of(data):
    err = pb.Error()
    err.ParseFromString(data)
    return err.code, err.message


def service_error(fn, *args, **kw):
    with pytest.raises(ts.OTSServiceError) as e:
        fn(*args, **kw)
    return e.value.get_http_status(), e.value.get_error_code(), e.value.get_error_message()


def cu(c):
    return (c.read, c.write)


# ------------------------------------------------------------------ tables

def test_table_operations_and_shard_splits(server):
    c = sdk(server)
    create(c, "plain")
    create(c, "split", split_points=[100, 200])
    assert c.list_table() == ("plain", "split")
    desc = c.describe_table("split")
    assert desc.table_meta.table_name == "split"
    assert desc.table_meta.schema_of_primary_key == PK_SCHEMA
    assert (desc.table_options.time_to_live, desc.table_options.max_version,
            desc.table_options.max_time_deviation) == (-1, 1, 86400)
    assert cu(desc.reserved_throughput_details.capacity_unit) == (0, 0)
    # The SDK drops shard_splits: read them off the wire.
    status, data = raw_post(server, "DescribeTable",
                            pb.DescribeTableRequest(table_name="split").SerializeToString())
    resp = pb.DescribeTableResponse()
    resp.ParseFromString(data)
    assert status == 200
    assert [CODEC.decode_row(s).primary_key for s in resp.shard_splits] == [[("gid", 100)], [("gid", 200)]]
    assert [v for v in server.service.client.describe_table("split").shard_splits] == [100, 200]
    upd = c.update_table("split", ts.TableOptions(max_version=3))
    assert upd.table_options.max_version == 3
    assert c.describe_table("split").table_options.max_version == 3
    assert c.list_search_index("split") == []
    c.delete_table("plain")
    assert c.list_table() == ("split",)
    assert service_error(c.describe_table, "plain") == (404, "OTSObjectNotExist",
                                                        "Requested table does not exist.")
    assert service_error(create, c, "split") == (409, "OTSObjectAlreadyExist",
                                                 "Requested table already exists.")


# -------------------------------------------------------------- single rows

@pytest.mark.parametrize("v4", [False, True], ids=["v2", "v4"])
def test_row_operations_conditions_versions(server, v4):
    c = sdk(server, v4=v4)
    create(c, max_version=3)
    pk = [("gid", 1), ("uid", "a")]
    consumed, row = c.put_row("t", ts.Row(pk, [("n", 1, T0), ("s", "x", T0), ("b", bytearray(b"\x00"), T0)]),
                              return_type=ts.ReturnType.RT_PK)
    assert cu(consumed) == (0, 1) and row.primary_key == pk
    consumed, row, token = c.get_row("t", pk)
    assert cu(consumed) == (1, 0) and token == b""
    assert row.primary_key == pk
    assert row.attribute_columns == [("b", bytearray(b"\x00"), T0), ("n", 1, T0), ("s", "x", T0)]
    # versions: add two more of n, read them back newest first, and a time range
    c.update_row("t", ts.Row(pk, {"PUT": [("n", 2, T0 + 1), ("n", 3, T0 + 2)]}), ts.Condition("EXPECT_EXIST"))
    _, row, _ = c.get_row("t", pk, ["n"], max_version=3)
    assert row.attribute_columns == [("n", 3, T0 + 2), ("n", 2, T0 + 1), ("n", 1, T0)]
    _, row, _ = c.get_row("t", pk, ["n"], max_version=None, time_range=(T0, T0 + 2))
    assert row.attribute_columns == [("n", 2, T0 + 1), ("n", 1, T0)]
    _, row, _ = c.get_row("t", pk, ["n"], max_version=None, time_range=T0 + 1)
    assert row.attribute_columns == [("n", 2, T0 + 1)]
    # update kinds: delete one version, delete all, increment
    c.update_row("t", ts.Row(pk, {"DELETE": [("n", None, T0 + 2)], "DELETE_ALL": ["s"],
                                  "INCREMENT": [("k", 5)]}), None)
    _, row, _ = c.get_row("t", pk, max_version=3)
    assert [(n, v) for n, v, _ in row.attribute_columns] == [("b", bytearray(b"\x00")), ("k", 5),
                                                            ("n", 2), ("n", 1)]
    # row-existence conditions
    assert service_error(c.put_row, "t", ts.Row(pk, [("n", 9)]), ts.Condition("EXPECT_NOT_EXIST")) == \
        (403, "OTSConditionCheckFail", "Condition check failed.")
    assert service_error(c.update_row, "t", ts.Row([("gid", 2), ("uid", "z")], {"PUT": [("n", 1)]}),
                         ts.Condition("EXPECT_EXIST"))[1] == "OTSConditionCheckFail"
    # column condition on a write
    ok = ts.Condition("IGNORE", ts.SingleColumnCondition("k", 5, ts.ComparatorType.EQUAL))
    bad = ts.Condition("IGNORE", ts.SingleColumnCondition("k", 6, ts.ComparatorType.EQUAL))
    assert service_error(c.update_row, "t", ts.Row(pk, {"PUT": [("x", 1)]}), bad)[1] == "OTSConditionCheckFail"
    consumed, _ = c.update_row("t", ts.Row(pk, {"PUT": [("x", 1)]}), ok)
    assert consumed.read == 1
    consumed, row = c.delete_row("t", ts.Row(pk), ts.Condition("EXPECT_EXIST"), ts.ReturnType.RT_PK)
    assert row.primary_key == pk
    assert c.get_row("t", pk)[1] is None
    assert cu(c.delete_row("t", ts.Row(pk), None)[0]) == (0, 1)


def test_filters_on_reads(server):
    c = sdk(server)
    create(c)
    for i in range(6):
        c.put_row("t", ts.Row([("gid", i), ("uid", "u")], [("n", i, T0), ("tag", "even" if i % 2 == 0 else "odd", T0)]))
    lo, hi = [("gid", ts.INF_MIN), ("uid", ts.INF_MIN)], [("gid", ts.INF_MAX), ("uid", ts.INF_MAX)]
    even = ts.SingleColumnCondition("tag", "even", ts.ComparatorType.EQUAL)
    _, _, rows, _ = c.get_range("t", ts.Direction.FORWARD, lo, hi, column_filter=even)
    assert [r.primary_key[0][1] for r in rows] == [0, 2, 4]
    comp = ts.CompositeColumnCondition(ts.LogicalOperator.AND)
    comp.add_sub_condition(ts.SingleColumnCondition("n", 1, ts.ComparatorType.GREATER_THAN))
    comp.add_sub_condition(ts.SingleColumnCondition("tag", "odd", ts.ComparatorType.EQUAL))
    _, _, rows, _ = c.get_range("t", ts.Direction.BACKWARD, hi, lo, column_filter=comp)
    assert [r.primary_key[0][1] for r in rows] == [5, 3]
    missing = ts.SingleColumnCondition("absent", 1, ts.ComparatorType.EQUAL, pass_if_missing=False)
    assert c.get_row("t", [("gid", 1), ("uid", "u")], column_filter=missing)[1] is None
    assert c.get_row("t", [("gid", 1), ("uid", "u")], column_filter=ts.SingleColumnCondition(
        "absent", 1, ts.ComparatorType.EQUAL))[1] is not None


def _small_pages(server, monkeypatch, limit, value, n):
    """An SDK client of table "t" holding rows (gid i, uid "u"; v i) for i <
    ``n``, the server's GetRange page ``limit`` (RANGE_ROWS, RANGE_BYTES) set
    to ``value``."""
    import regions.tablestore.client as emb_client
    monkeypatch.setattr(emb_client, limit, value)
    c = sdk(server)
    create(c)
    for i in range(n):
        c.put_row("t", ts.Row([("gid", i), ("uid", "u")], [("v", i, T0)]))
    return c


def test_paging_through_xget_range(server, monkeypatch):
    c = _small_pages(server, monkeypatch, "RANGE_ROWS", 4, 11)  # several round trips
    lo, hi = [("gid", ts.INF_MIN), ("uid", ts.INF_MIN)], [("gid", ts.INF_MAX), ("uid", ts.INF_MAX)]
    consumed, next_pk, rows, _ = c.get_range("t", ts.Direction.FORWARD, lo, hi)
    assert len(rows) == 4 and next_pk == [("gid", 4), ("uid", "u")]
    counter = ts.CapacityUnit(0, 0)
    got = [r.primary_key[0][1] for r in c.xget_range("t", ts.Direction.FORWARD, lo, hi, counter)]
    assert got == list(range(11)) and counter.read >= 3
    got = [r.primary_key[0][1] for r in c.xget_range("t", ts.Direction.BACKWARD, hi, lo, counter, count=6)]
    assert got == [10, 9, 8, 7, 6, 5]


def test_a_range_page_ends_after_the_row_that_crosses_its_bytes(server, monkeypatch):
    """The page's bytes count each cell's timestamp (the Java SDK's
    RestrictedItemTest 35): a row of "gid" 1 "uid" "u" with one cell "v" 1
    is 24 bytes of CU and 32 on the page, so with a 100-byte page the 4th
    row crosses it (by CU alone, the 5th) and the next page starts after."""
    c = _small_pages(server, monkeypatch, "RANGE_BYTES", 100, 6)
    lo, hi = [("gid", ts.INF_MIN), ("uid", ts.INF_MIN)], [("gid", ts.INF_MAX), ("uid", ts.INF_MAX)]
    consumed, next_pk, rows, _ = c.get_range("t", ts.Direction.FORWARD, lo, hi)
    assert [r.primary_key[0][1] for r in rows] == [0, 1, 2, 3]
    assert next_pk == [("gid", 4), ("uid", "u")] and cu(consumed) == (1, 0)
    _, next_pk, rows, _ = c.get_range("t", ts.Direction.FORWARD, next_pk, hi)
    assert [r.primary_key[0][1] for r in rows] == [4, 5] and next_pk is None


# ------------------------------------------------------------------ batches

def test_batches_with_partial_failures(server):
    c = sdk(server)
    create(c)
    c.put_row("t", ts.Row([("gid", 1), ("uid", "a")], [("v", 1, T0)]))
    c.put_row("t", ts.Row([("gid", 4), ("uid", "d")], [("v", 4, T0)]))
    req = ts.BatchWriteRowRequest()
    req.add(ts.TableInBatchWriteRowItem("t", [
        ts.PutRowItem(ts.Row([("gid", 2), ("uid", "b")], [("v", 2, T0)]), ts.Condition("IGNORE")),
        ts.PutRowItem(ts.Row([("gid", 1), ("uid", "a")], [("v", 9)]), ts.Condition("EXPECT_NOT_EXIST")),
        ts.UpdateRowItem(ts.Row([("gid", 4), ("uid", "d")], {"PUT": [("w", 1, T0)]}), ts.Condition("EXPECT_EXIST")),
        ts.DeleteRowItem(ts.Row([("gid", 3), ("uid", "c")]), None, ts.ReturnType.RT_PK),
    ]))
    req.add(ts.TableInBatchWriteRowItem("missing", [
        ts.PutRowItem(ts.Row([("gid", 1), ("uid", "a")], [("v", 1)]), None)]))
    resp = c.batch_write_row(req)
    assert not resp.is_all_succeed()
    puts = resp.get_put_by_table("t")
    assert [p.is_ok for p in puts] == [True, False]
    assert (puts[1].error_code, puts[1].error_message) == ("OTSConditionCheckFail", "Condition check failed.")
    assert resp.get_update_by_table("t")[0].is_ok
    assert resp.get_delete_by_table("t")[0].row.primary_key == [("gid", 3), ("uid", "c")]
    assert resp.get_put_by_table("missing")[0].error_code == "OTSObjectNotExist"
    get = ts.BatchGetRowRequest()
    get.add(ts.TableInBatchGetRowItem("t", [[("gid", 4), ("uid", "d")], [("gid", 2), ("uid", "b")],
                                            [("gid", 7), ("uid", "none")]], max_version=1))
    get.add(ts.TableInBatchGetRowItem("missing", [[("gid", 1), ("uid", "a")]], max_version=1))
    out = c.batch_get_row(get)
    rows = out.get_result_by_table("t")
    assert [r.is_ok for r in rows] == [True, True, True]
    assert rows[0].row.attribute_columns == [("v", 4, T0), ("w", 1, T0)]
    assert rows[1].row.attribute_columns == [("v", 2, T0)]
    assert rows[2].row is None
    assert out.get_result_by_table("missing")[0].error_code == "OTSObjectNotExist"
    empty = ts.BatchWriteRowRequest()
    assert service_error(c.batch_write_row, empty) == (400, "OTSParameterInvalid",
                                                       "No row is specified in BatchWriteRow.")


def test_async_client(server):
    async def run():
        async with ts.AsyncOTSClient(server.endpoint, KEY_ID, SECRET, INSTANCE,
                                     retry_policy=ts.NoRetryPolicy(), region="cn-local") as c:
            await c.create_table(ts.TableMeta("t", PK_SCHEMA), ts.TableOptions(),
                                 ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
            await asyncio.gather(*[c.put_row("t", ts.Row([("gid", i), ("uid", "u")], [("v", i, T0)]))
                                   for i in range(5)])
            _, row, _ = await c.get_row("t", [("gid", 3), ("uid", "u")])
            _, _, rows, _ = await c.get_range("t", ts.Direction.FORWARD,
                                              [("gid", 1), ("uid", ts.INF_MIN)],
                                              [("gid", 4), ("uid", ts.INF_MIN)])
            with pytest.raises(ts.OTSServiceError) as e:
                await c.get_row("nope", [("gid", 1), ("uid", "u")])
            return row, rows, e.value.get_error_code()
    row, rows, code = asyncio.run(run())
    assert row.attribute_columns == [("v", 3, T0)]
    assert [r.primary_key[0][1] for r in rows] == [1, 2, 3]
    assert code == "OTSObjectNotExist"


# ------------------------------------------------------------------- errors

def test_service_errors_reach_the_sdk_with_code_message_status(server):
    c = sdk(server)
    create(c)
    assert service_error(c.get_row, "nope", [("gid", 1), ("uid", "a")]) == \
        (404, "OTSObjectNotExist", "Requested table does not exist.")
    assert service_error(c.get_range, "t", ts.Direction.FORWARD, [("gid", 5), ("uid", "a")],
                         [("gid", 1), ("uid", "a")]) == \
        (400, "OTSParameterInvalid", "Begin key must less than end key in FORWARD")
    assert service_error(c.get_row, "t", [("uid", "a"), ("gid", 1)])[:2] == (400, "OTSInvalidPK")
    assert service_error(c.put_row, "t", ts.Row([("gid", 1), ("uid", "a")], [("v", 1, 1)]))[:2] == \
        (400, "OTSParameterInvalid")  # timestamp far outside the allowed deviation
    # no version condition: each operation's text, as the Java SDK's ParameterLegalityTest
    # reads them; BatchGetRow fails whole
    pk, lo = [("gid", 1), ("uid", "a")], [("gid", ts.INF_MIN), ("uid", ts.INF_MIN)]
    assert service_error(c.get_row, "t", pk, max_version=None) == \
        (400, "OTSParameterInvalid", "No version condition is specified.")
    assert service_error(c.get_range, "t", ts.Direction.FORWARD, lo, pk, max_version=None) == \
        (400, "OTSParameterInvalid", "No version condition is specified.")
    batch = ts.BatchGetRowRequest()
    batch.add(ts.TableInBatchGetRowItem("t", [pk]))
    assert service_error(c.batch_get_row, batch) == \
        (400, "OTSParameterInvalid", "No version condition is specified while querying row.")


def test_bad_requests_get_the_right_error_and_change_nothing(server):
    c = sdk(server)
    create(c)
    pk = [("gid", 1), ("uid", "a")]
    assert service_error(sdk(server, secret="wrong").put_row, "t", ts.Row(pk, [("v", 1)])) == \
        (403, "OTSAuthFailed", "Signature mismatch.")
    status, data = raw_post(server, "NoSuchApi", b"")
    assert (status, error_of(data)) == (400, ("OTSParameterInvalid", "Unsupported operation: NoSuchApi."))
    row = bytearray(CODEC.encode_row(pk, [("v", 1)]))
    row[-1] ^= 0xFF  # row checksum
    req = pb.PutRowRequest(table_name="t", row=bytes(row))
    req.condition.row_existence = pb.IGNORE
    status, data = raw_post(server, "PutRow", req.SerializeToString())
    assert status == 400 and error_of(data)[0] == "OTSParameterInvalid"
    assert "checksum is mismatch" in error_of(data)[1]
    req.row = CODEC.encode_row(pk, [("v", 1)])
    status, data = raw_post(server, "PutRow", req.SerializeToString()[:-3])
    assert (status, error_of(data)) == (400, ("OTSParameterInvalid", "Parse PBMessage from RawString failed."))
    assert c.get_row("t", pk)[1] is None
    assert c.get_range("t", ts.Direction.FORWARD, [("gid", ts.INF_MIN), ("uid", ts.INF_MIN)],
                       [("gid", ts.INF_MAX), ("uid", ts.INF_MAX)])[2] == []


# ---------------------------------------------------- parity with embedded

def scenario(c, lib):
    """The same calls through either client; returns everything observable."""
    create(c, max_version=2, lib=lib)
    out = []
    for i in range(4):
        out.append(c.put_row("t", lib.Row([("gid", i), ("uid", "u%d" % i)],
                                          [("s", "x" * (i * 3000), T0), ("n", i, T0)])))
    out.append(c.update_row("t", lib.Row([("gid", 1), ("uid", "u1")], {"PUT": [("n", 10, T0 + 5)]}),
                            lib.Condition("EXPECT_EXIST"), lib.ReturnType.RT_PK))
    out.append(c.get_row("t", [("gid", 1), ("uid", "u1")], max_version=2))
    out.append(c.get_row("t", [("gid", 9), ("uid", "none")]))
    out.append(c.get_range("t", lib.Direction.FORWARD, [("gid", lib.INF_MIN), ("uid", lib.INF_MIN)],
                           [("gid", lib.INF_MAX), ("uid", lib.INF_MAX)], limit=3))
    out.append(c.delete_row("t", lib.Row([("gid", 2), ("uid", "u2")]), lib.Condition("EXPECT_EXIST")))
    try:
        c.put_row("t", lib.Row([("gid", 0), ("uid", "u0")], [("n", 1)]), lib.Condition("EXPECT_NOT_EXIST"))
    except (lib.OTSServiceError,) as e:
        out.append((e.get_http_status(), e.get_error_code(), e.get_error_message()))
    out.extend(pk_only_rows_and_projection(c, lib))
    return out


def pk_only_rows_and_projection(c, lib):
    """Rows with no attribute column, columns_to_get, filters on read columns, CU."""
    lo = [("gid", lib.INF_MIN), ("uid", lib.INF_MIN)]
    hi = [("gid", lib.INF_MAX), ("uid", lib.INF_MAX)]
    out = [c.put_row("t", lib.Row([("gid", 20), ("uid", "pk-only")], [])),
           c.update_row("t", lib.Row([("gid", 3), ("uid", "u3")], {"DELETE_ALL": ["s", "n"]}),
                        lib.Condition("EXPECT_EXIST")),
           c.update_row("t", lib.Row([("gid", 21), ("uid", "gone")], {"DELETE_ALL": ["s"]}),
                        None),
           c.get_row("t", [("gid", 20), ("uid", "pk-only")]),
           c.get_row("t", [("gid", 3), ("uid", "u3")]),
           c.get_row("t", [("gid", 21), ("uid", "gone")]),
           c.get_row("t", [("gid", 1), ("uid", "u1")], ["s"]),
           c.get_row("t", [("gid", 1), ("uid", "u1")], ["nothing"]),
           c.get_range("t", lib.Direction.FORWARD, lo, hi),
           c.get_range("t", lib.Direction.BACKWARD, hi, lo, ["n", "gid"]),
           c.get_range("t", lib.Direction.FORWARD, lo, hi, ["s"],
                       column_filter=lib.SingleColumnCondition(
                           "n", 1, lib.ComparatorType.EQUAL, pass_if_missing=False))]
    try:
        c.put_row("t", lib.Row([("gid", 3), ("uid", "u3")], [("n", 1)]),
                  lib.Condition("EXPECT_NOT_EXIST"))
    except lib.OTSServiceError as e:
        out.append((e.get_http_status(), e.get_error_code(), e.get_error_message()))
    request = lib.BatchGetRowRequest()
    request.add(lib.TableInBatchGetRowItem(
        "t", [[("gid", 20), ("uid", "pk-only")], [("gid", 21), ("uid", "gone")]], max_version=1))
    result = c.batch_get_row(request)
    out.append([(i.is_ok, i.consumed, i.row) for i in result.get_result_by_table("t")])
    return out


def normalize(value):
    """Rows and CapacityUnits of either library -> plain tuples."""
    if hasattr(value, "read") and hasattr(value, "write"):
        return ("CU", value.read, value.write)
    if hasattr(value, "primary_key"):
        # The SDK decodes a PK-only row (RT_PK) with attribute_columns [], the
        # embedded client gives None: same row, so compare both as empty.
        return ("Row", normalize(value.primary_key), normalize(value.attribute_columns or []))
    if isinstance(value, (list, tuple)):
        return tuple(normalize(v) for v in value)
    return value


def test_same_scenario_embedded_and_through_the_sdk_gives_identical_results(server, tmp_path):
    through_sdk = scenario(sdk(server), ts)
    with emb.OTSClient(str(tmp_path / "embedded")) as local:
        embedded = scenario(local, emb)
    assert normalize(through_sdk) == normalize(embedded)
    assert normalize(through_sdk[9]) == (403, "OTSConditionCheckFail", "Condition check failed.")
    got = normalize(through_sdk[10:])
    pk_only = ("Row", (("gid", 20), ("uid", "pk-only")), ())
    emptied = ("Row", (("gid", 3), ("uid", "u3")), ())
    assert got[3] == (("CU", 1, 0), pk_only, b"")
    assert got[4] == (("CU", 1, 0), emptied, b"")
    assert got[5] == (("CU", 1, 0), None, b"")               # deletes only: no row created
    assert got[6][1][1] == (("gid", 1), ("uid", "u1"))         # the full key, not just "s"
    assert got[7][1] is None                                   # nothing named exists
    assert pk_only in got[8][2] and emptied in got[8][2]
    assert [r[1] for r in got[9][2]] == [(("gid", 20), ("uid", "pk-only")),
                                          (("gid", 3), ("uid", "u3")), (("gid", 1), ("uid", "u1")),
                                          (("gid", 0), ("uid", "u0"))]
    assert got[10][2] == ()  # the filter's column n is not read: missing, and it must exist
    assert got[11] == (403, "OTSConditionCheckFail", "Condition check failed.")
    assert [(ok, row is not None) for ok, _, row in got[12]] == [(True, True), (True, False)]


def test_pk_projection_requested_over_the_wire(tmp_path):
    """regions-server --pk-projection requested: the 2017 guide's projection."""
    srv = make_server(str(tmp_path / "data"), "127.0.0.1", 0, INSTANCE, KEY_ID, SECRET,
                      pk_projection="requested").start()
    try:
        c = sdk(srv)
        create(c)
        c.put_row("t", ts.Row([("gid", 1), ("uid", "a")], [("x", 1)]))
        c.put_row("t", ts.Row([("gid", 2), ("uid", "b")], []))
        assert c.get_row("t", [("gid", 1), ("uid", "a")], ["x"])[1].primary_key == []
        lo = [("gid", ts.INF_MIN), ("uid", ts.INF_MIN)]
        hi = [("gid", ts.INF_MAX), ("uid", ts.INF_MAX)]
        rows = c.get_range("t", ts.Direction.FORWARD, lo, hi, ["x", "uid"])[2]
        assert [(r.primary_key, r.attribute_columns) for r in rows] == [
            ([("uid", "a")], [("x", 1, rows[0].attribute_columns[0][2])]), ([("uid", "b")], [])]
    finally:
        srv.stop()


def test_max_partitions_refuses_as_the_service_does(tmp_path):
    """regions-server --max-partitions 10: a CreateTable of 11 partitions is
    refused with the service's text (the Java SDK's SplitPointTest), 10 are
    taken; the default takes any number (regions-import --split-points)."""
    from regions.otsserver.cli import build_parser
    assert build_parser().parse_args(["--in-memory", "--max-partitions", "10"]).max_partitions == 10
    assert build_parser().parse_args(["--in-memory"]).max_partitions is None
    srv = make_server(str(tmp_path / "data"), "127.0.0.1", 0, INSTANCE, KEY_ID, SECRET,
                      max_partitions=10).start()
    try:
        c = sdk(srv)
        with pytest.raises(ts.OTSServiceError) as info:
            create(c, "eleven", split_points=list(range(1, 11)))
        assert (info.value.get_error_code(), info.value.get_error_message()) == (
            "OTSParameterInvalid", "The count of partitions cannot be greater than 10")
        assert "eleven" not in c.list_table()
        create(c, "ten", split_points=list(range(1, 10)))
        assert "ten" in c.list_table()
    finally:
        srv.stop()
    with emb.OTSClient(None) as c:        # the embedded default: any number
        create(c, "many", split_points=list(range(1, 64)), lib=emb)
        assert len(c.describe_table("many").shard_splits) == 63
    with pytest.raises(ValueError):
        emb.OTSClient(None, max_partitions=0)
