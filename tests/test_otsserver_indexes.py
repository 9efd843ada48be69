"""Secondary indexes over the wire: CreateTable's ``index_metas``, CreateIndex,
DropIndex and DescribeTable's ``index_metas`` (regions.otsserver.protocol and
convert).  The decoding and encoding are tested on the messages alone; the rest
drives the official SDK, unchanged, against a server on a free loopback port.
"""
import logging
import time

import pytest
import tablestore as ts

import regions.tablestore as emb
from regions.otsserver import convert as cv
from regions.otsserver import wire as pb
from regions.otsserver.errors import WireError
from regions.otsserver.protocol import TablestoreService
from regions.tablestore import metadata as md
from test_otsserver_sdk import error_of, raw_post, sdk, server, service_error  # noqa: F401 (server: a fixture)

logging.getLogger("tablestore").addHandler(logging.NullHandler())
logging.getLogger("tablestore").setLevel(logging.CRITICAL)

PK = [("gid", "INTEGER"), ("uid", "STRING")]
DEFINED = [("i", "INTEGER"), ("bool", "BOOLEAN"), ("d", "DOUBLE"), ("s", "STRING"), ("b", "BINARY")]


def _index_proto(name="idx", pk=("i", "s"), defined=("d",), kind=pb.IT_GLOBAL_INDEX,
                 mode=pb.IUM_ASYNC_INDEX):
    msg = pb.IndexMeta(name=name, index_update_mode=mode, index_type=kind)
    msg.primary_key.extend(pk)
    msg.defined_column.extend(defined)
    return msg


def _sync_phase(msg):
    """Field 6 of an IndexMeta (absent from the Python SDK's proto), or None."""
    return msg.index_sync_phase if msg.HasField("index_sync_phase") else None


# ------------------------------------------------- decoding and encoding

@pytest.mark.parametrize("kind, mode, expected", [
    (pb.IT_GLOBAL_INDEX, pb.IUM_ASYNC_INDEX, md.SecondaryIndexType.GLOBAL_INDEX),
    (pb.IT_LOCAL_INDEX, pb.IUM_SYNC_INDEX, md.SecondaryIndexType.LOCAL_INDEX)])
def test_index_meta_decodes_to_the_data_apis_class(kind, mode, expected):
    meta = cv.index_meta(_index_proto("by_i", ["i", "s"], ["d", "b"], kind, mode))
    assert isinstance(meta, md.SecondaryIndexMeta)
    assert (meta.index_name, meta.primary_key_names, meta.defined_column_names) == \
        ("by_i", ["i", "s"], ["d", "b"])
    assert meta.index_type is expected


@pytest.mark.parametrize("kind, mode", [(pb.IT_GLOBAL_INDEX, pb.IUM_SYNC_INDEX),
                                        (pb.IT_LOCAL_INDEX, pb.IUM_ASYNC_INDEX)])
def test_an_update_mode_other_than_the_types_is_refused(kind, mode):
    with pytest.raises(WireError) as e:
        cv.index_meta(_index_proto(kind=kind, mode=mode))
    assert (e.value.http_status, e.value.code) == (400, "OTSParameterInvalid")
    assert pb.IndexUpdateMode.Name(mode) in e.value.message
    assert pb.IndexType.Name(kind) in e.value.message


@pytest.mark.parametrize("kind, phase, mode_pb, phase_pb", [
    (md.SecondaryIndexType.GLOBAL_INDEX, "ISP_FULL", pb.IUM_ASYNC_INDEX, 1),
    (md.SecondaryIndexType.LOCAL_INDEX, "ISP_INCR", pb.IUM_SYNC_INDEX, 2)])
def test_describe_tables_index_meta_has_every_field(kind, phase, mode_pb, phase_pb):
    index = md.SecondaryIndexMeta("by_s", ["s", "gid", "uid"], [], kind)
    index.index_update_mode = pb.IndexUpdateMode.Name(mode_pb)
    index.index_sync_phase = phase
    resp = pb.DescribeTableResponse()
    cv.fill_index_meta(resp.index_metas, index)
    msg = pb.IndexMeta()
    msg.ParseFromString(resp.index_metas[0].SerializeToString())   # what a client reads
    assert msg.IsInitialized()
    assert (msg.name, list(msg.primary_key), list(msg.defined_column)) == \
        ("by_s", ["s", "gid", "uid"], [])
    assert (msg.index_type, msg.index_update_mode) == (int(kind), mode_pb)
    assert _sync_phase(msg) == phase_pb


def test_describe_without_mode_or_phase_gets_the_types_mode_and_no_phase():
    index = md.SecondaryIndexMeta("loc", ["gid", "s"], ["d"], md.SecondaryIndexType.LOCAL_INDEX)
    resp = pb.DescribeTableResponse()
    cv.fill_index_meta(resp.index_metas, index)
    assert resp.index_metas[0].index_update_mode == pb.IUM_SYNC_INDEX
    assert _sync_phase(resp.index_metas[0]) is None


class _Recorder:
    """A data API client that records the calls the handlers make."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args, **kw: self.calls.append((name, args, kw))


def test_handlers_pass_the_decoded_requests_to_the_client():
    client = _Recorder()
    service = TablestoreService(client)
    req = pb.CreateTableRequest()
    req.table_meta.table_name = "t"
    for name, kind in PK:
        req.table_meta.primary_key.add(name=name, type=cv.PK_TYPES_PB[kind])
    for name, kind in DEFINED:
        req.table_meta.defined_column.add(name=name, type=cv.DEFINED_TYPES_PB[kind])
    req.reserved_throughput.capacity_unit.read = 0
    req.reserved_throughput.capacity_unit.write = 0
    req.index_metas.append(_index_proto("g", ["s"], ["d"]))
    req.index_metas.append(_index_proto("l", ["gid", "i"], [], pb.IT_LOCAL_INDEX,
                                        pb.IUM_SYNC_INDEX))
    assert service.handle("CreateTable", req.SerializeToString()) == b""
    name, (meta, _, _), kw = client.calls.pop()
    assert name == "create_table"
    assert meta.defined_columns == DEFINED
    assert [(m.index_name, m.primary_key_names, m.defined_column_names, m.index_type)
            for m in kw["secondary_indexes"]] == \
        [("g", ["s"], ["d"], md.SecondaryIndexType.GLOBAL_INDEX),
         ("l", ["gid", "i"], [], md.SecondaryIndexType.LOCAL_INDEX)]

    req = pb.CreateIndexRequest(main_table_name="t", index_meta=_index_proto("g2"))
    assert service.handle("CreateIndex", req.SerializeToString()) == b""
    name, (table, meta), kw = client.calls.pop()
    assert (name, table, meta.index_name, kw) == \
        ("create_secondary_index", "t", "g2", {"include_base_data": False})   # proto2 default
    req.include_base_data = True
    service.handle("CreateIndex", req.SerializeToString())
    assert client.calls.pop()[2] == {"include_base_data": True}

    req = pb.DropIndexRequest(main_table_name="t", index_name="g2")
    assert service.handle("DropIndex", req.SerializeToString()) == b""
    assert client.calls.pop() == ("delete_secondary_index", ("t", "g2"), {})


def test_a_create_index_without_its_index_meta_is_a_bad_message():
    service = TablestoreService(_Recorder())
    body = pb.CreateIndexRequest(main_table_name="t").SerializePartialToString()
    with pytest.raises(WireError) as e:
        service.handle("CreateIndex", body)
    assert e.value.message == "Parse PBMessage from RawString failed."


# ------------------------------------------------------- the official SDK

def create(client, name="t", indexes=None):
    client.create_table(ts.TableMeta(name, PK, DEFINED), ts.TableOptions(-1, 1),
                        ts.ReservedThroughput(ts.CapacityUnit(0, 0)), secondary_indexes=indexes)


LOADING = "Disallow read index table in building base state"


def index_rows(client, index, pk_names, timeout=10.0, expect=None):
    """The rows of ``index`` (a whole-range get_range), polled until they are
    ``expect`` (a global index is updated asynchronously; an index loading its
    base data refuses reads, as the vendor's test expects) or ``timeout`` ends."""
    start = [(n, ts.INF_MIN) for n in pk_names]
    end = [(n, ts.INF_MAX) for n in pk_names]
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, _, rows, _ = client.get_range(index, ts.Direction.FORWARD, start, end, max_version=1)
            got = [(r.primary_key, [(c[0], c[1]) for c in r.attribute_columns]) for r in rows]
        except ts.OTSServiceError as e:
            if e.get_error_message() != LOADING or time.monotonic() > deadline:
                raise
            got = None
        if got is not None and (expect is None or got == expect or time.monotonic() > deadline):
            return got
        time.sleep(0.02)


def test_create_table_with_a_global_index_and_read_it(server):
    client = sdk(server)
    create(client, indexes=[ts.SecondaryIndexMeta("by_i", ["i", "s"], ["bool", "d"])])
    desc = client.describe_table("t")
    assert desc.table_meta.defined_columns == DEFINED
    [index] = desc.secondary_indexes
    assert (index.index_name, index.defined_column_names, index.index_type) == \
        ("by_i", ["bool", "d"], ts.SecondaryIndexType.GLOBAL_INDEX)
    client.put_row("t", ts.Row([("gid", 1), ("uid", "a")],
                               [("i", 7), ("s", "x"), ("bool", True), ("d", 1.5), ("b", bytearray(b"z"))]))
    client.put_row("t", ts.Row([("gid", 2), ("uid", "b")], [("i", 3), ("s", "y"), ("d", 2.5)]))
    expect = [([("i", 3), ("s", "y"), ("gid", 2), ("uid", "b")], [("d", 2.5)]),
              ([("i", 7), ("s", "x"), ("gid", 1), ("uid", "a")], [("bool", True), ("d", 1.5)])]
    assert index_rows(client, "by_i", ["i", "s", "gid", "uid"], expect=expect) == expect


def test_describe_gives_the_index_columns_as_created(server):
    """The vendor's table_operation_test compares them with what it created:
    the index columns alone, without the data table's key appended."""
    client = sdk(server)
    create(client, indexes=[ts.SecondaryIndexMeta("by_i", ["i", "s"], ["bool"])])
    client.create_secondary_index("t", ts.SecondaryIndexMeta("by_gid", ["gid", "s"], [],
                                                             ts.SecondaryIndexType.LOCAL_INDEX), False)
    assert [(m.index_name, m.primary_key_names) for m in client.describe_table("t").secondary_indexes] \
        == [("by_i", ["i", "s"]), ("by_gid", ["gid", "s"])]


def test_a_local_index_is_readable_as_soon_as_the_write_returns(server):
    client = sdk(server)
    create(client)
    client.create_secondary_index(
        "t", ts.SecondaryIndexMeta("by_gid_s", ["gid", "s"], ["i"], ts.SecondaryIndexType.LOCAL_INDEX),
        False)
    [index] = client.describe_table("t").secondary_indexes
    assert index.index_type == ts.SecondaryIndexType.LOCAL_INDEX
    client.put_row("t", ts.Row([("gid", 5), ("uid", "u")], [("s", "k"), ("i", 9)]))
    assert index_rows(client, "by_gid_s", ["gid", "s", "uid"]) == \
        [([("gid", 5), ("s", "k"), ("uid", "u")], [("i", 9)])]
    _, row, _ = client.get_row("by_gid_s", [("gid", 5), ("s", "k"), ("uid", "u")], max_version=1)
    assert row.attribute_columns[0][:2] == ("i", 9)


def test_create_index_with_base_data_then_drop_it(server):
    client = sdk(server)
    create(client)
    for n in range(3):
        client.put_row("t", ts.Row([("gid", n), ("uid", str(n))], [("s", "s%d" % (2 - n))]))
    client.create_secondary_index("t", ts.SecondaryIndexMeta("by_s", ["s"], []), True)
    expect = [([("s", "s%d" % (2 - n)), ("gid", n), ("uid", str(n))], []) for n in (2, 1, 0)]
    assert index_rows(client, "by_s", ["s", "gid", "uid"], expect=expect) == expect
    client.delete_secondary_index("t", "by_s")
    assert client.describe_table("t").secondary_indexes == []
    status, code, _ = service_error(client.get_row, "by_s", [("s", "s0"), ("gid", 2), ("uid", "2")])
    assert (status, code) == (404, "OTSObjectNotExist")


def test_the_wire_describe_carries_update_mode_and_sync_phase(server):
    client = sdk(server)
    create(client, indexes=[ts.SecondaryIndexMeta("g", ["s"], []),
                            ts.SecondaryIndexMeta("l", ["gid", "i"], [],
                                                  ts.SecondaryIndexType.LOCAL_INDEX)])
    status, data = raw_post(server, "DescribeTable",
                            pb.DescribeTableRequest(table_name="t").SerializeToString())
    assert status == 200
    resp = pb.DescribeTableResponse()
    resp.ParseFromString(data)
    assert resp.IsInitialized()
    by_name = {m.name: m for m in resp.index_metas}
    assert (by_name["g"].index_type, by_name["g"].index_update_mode) == \
        (pb.IT_GLOBAL_INDEX, pb.IUM_ASYNC_INDEX)
    assert (by_name["l"].index_type, by_name["l"].index_update_mode) == \
        (pb.IT_LOCAL_INDEX, pb.IUM_SYNC_INDEX)
    assert {_sync_phase(m) for m in resp.index_metas} == {2}      # ISP_INCR: nothing to load


def test_a_mismatched_update_mode_over_the_wire_is_refused(server):
    create(sdk(server))
    req = pb.CreateIndexRequest(main_table_name="t", index_meta=_index_proto(
        "l", ["gid", "s"], [], pb.IT_LOCAL_INDEX, pb.IUM_ASYNC_INDEX))
    status, data = raw_post(server, "CreateIndex", req.SerializeToString())
    assert (status, error_of(data)[0]) == (400, "OTSParameterInvalid")
    assert "IUM_ASYNC_INDEX" in error_of(data)[1]
    assert sdk(server).describe_table("t").secondary_indexes == []


def embedded_error(fn, *args, **kw):
    with pytest.raises(emb.OTSServiceError) as e:
        fn(*args, **kw)
    return e.value.http_status, e.value.code, e.value.message


def test_index_errors_are_the_data_apis(server, tmp_path):
    """Refused index operations come back over the wire with the embedded
    client's status, code and message."""
    client = sdk(server)
    local = emb.OTSClient(str(tmp_path / "embedded"))
    try:
        for c in (client, local):
            create(c, indexes=[ts.SecondaryIndexMeta("by_s", ["s"], [])])
        cases = [
            ("create_secondary_index", ("nope", ts.SecondaryIndexMeta("x", ["s"], []), False)),
            ("create_secondary_index", ("t", ts.SecondaryIndexMeta("x", ["undeclared"], []), False)),
            ("create_secondary_index", ("t", ts.SecondaryIndexMeta("x", ["d"], []), False)),
            ("create_secondary_index", ("t", ts.SecondaryIndexMeta("by_s", ["i"], []), False)),
            ("create_secondary_index", ("t", ts.SecondaryIndexMeta(
                "x", ["s"], [], ts.SecondaryIndexType.LOCAL_INDEX), False)),
            ("delete_secondary_index", ("t", "no_such_index")),
            ("delete_secondary_index", ("nope", "by_s")),
            ("put_row", ("by_s", ts.Row([("s", "a"), ("gid", 1), ("uid", "u")], [("v", 1)]))),
        ]
        for method, args in cases:
            wire = service_error(getattr(client, method), *args)
            assert wire == embedded_error(getattr(local, method), *args), (method, args)
            assert wire[0] in (400, 404, 409)
        assert [m.index_name for m in client.describe_table("t").secondary_indexes] == ["by_s"]
    finally:
        local.close()


def test_index_requests_are_metered_under_their_api(server):
    client = sdk(server)
    create(client)
    client.create_secondary_index("t", ts.SecondaryIndexMeta("x", ["s"], []), False)
    client.delete_secondary_index("t", "x")
    requests = server.service.client.metrics()["api"]["requests"]
    assert (requests.get("CreateIndex"), requests.get("DropIndex")) == (1, 1)


def test_embedded_and_wire_describe_agree(server, tmp_path):
    client = sdk(server)
    indexes = [ts.SecondaryIndexMeta("g", ["i"], ["d"]),
               ts.SecondaryIndexMeta("l", ["gid", "s"], [], ts.SecondaryIndexType.LOCAL_INDEX)]
    create(client, indexes=indexes)
    with emb.OTSClient(str(tmp_path / "embedded")) as local:
        local.create_table(emb.TableMeta("t", PK, DEFINED), emb.TableOptions(-1, 1),
                           secondary_indexes=indexes)
        embedded = local.describe_table("t").secondary_indexes
    wire = client.describe_table("t").secondary_indexes
    assert [(m.index_name, m.primary_key_names, m.defined_column_names, int(m.index_type))
            for m in wire] == \
        [(m.index_name, m.primary_key_names, m.defined_column_names, int(m.index_type))
         for m in embedded]


def test_describe_table_says_the_table_is_active_for_the_go_sdk(server):
    create(sdk(server))
    status, data = raw_post(server, "DescribeTable",
                            pb.DescribeTableRequest(table_name="t").SerializeToString())
    resp = pb.DescribeTableResponse()
    resp.ParseFromString(data)
    assert status == 200
    assert resp.IsInitialized() and resp.table_status == pb.ACTIVE


# ------------------------------------------- AddDefinedColumn, DeleteDefinedColumn

def _add_defined(table, columns):
    req = pb.AddDefinedColumnRequest(table_name=table)
    for name, kind in columns:
        req.columns.add(name=name, type=cv.DEFINED_TYPES_PB[kind])
    return req.SerializeToString()


def _delete_defined(table, names):
    return pb.DeleteDefinedColumnRequest(table_name=table,
                                                  columns=names).SerializeToString()


def test_defined_columns_added_and_deleted_over_the_wire(server):
    client = sdk(server)
    create(client, indexes=[ts.SecondaryIndexMeta("by_s", ["s"], ["d"])])
    assert raw_post(server, "AddDefinedColumn",
                    _add_defined("t", [("x", "STRING"), ("y", "DOUBLE")])) == (200, b"")
    assert client.describe_table("t").table_meta.defined_columns == \
        DEFINED + [("x", "STRING"), ("y", "DOUBLE")]
    client.create_secondary_index("t", ts.SecondaryIndexMeta("by_x", ["x"], ["y"]), False)
    assert raw_post(server, "DeleteDefinedColumn", _delete_defined("t", ["i", "bool"])) == \
        (200, b"")
    assert [c for c, _ in client.describe_table("t").table_meta.defined_columns] == \
        ["d", "s", "b", "x", "y"]
    requests = server.service.client.metrics()["api"]["requests"]
    assert (requests.get("AddDefinedColumn"), requests.get("DeleteDefinedColumn")) == (1, 1)


def test_defined_column_errors_are_the_data_apis(server, tmp_path):
    create(sdk(server), indexes=[ts.SecondaryIndexMeta("by_s", ["s"], ["d"])])
    with emb.OTSClient(str(tmp_path / "embedded")) as local:
        create(local, indexes=[ts.SecondaryIndexMeta("by_s", ["s"], ["d"])])
        for api, body, method, args in [
                ("AddDefinedColumn", _add_defined("t", [("s", "STRING")]),
                 "add_defined_column", ("t", [("s", "STRING")])),
                ("AddDefinedColumn", _add_defined("t", [("gid", "INTEGER")]),
                 "add_defined_column", ("t", [("gid", "INTEGER")])),
                ("AddDefinedColumn", _add_defined("nope", [("z", "INTEGER")]),
                 "add_defined_column", ("nope", [("z", "INTEGER")])),
                ("DeleteDefinedColumn", _delete_defined("t", ["d"]),
                 "delete_defined_column", ("t", ["d"])),
                ("DeleteDefinedColumn", _delete_defined("t", ["never"]),
                 "delete_defined_column", ("t", ["never"]))]:
            status, data = raw_post(server, api, body)
            code, message = error_of(data)
            assert (status, code, message) == embedded_error(getattr(local, method), *args), api
    status, data = raw_post(server, "AddDefinedColumn", b"\x12\x05\x0a\x01x\x10\x04")  # no table
    assert (status, error_of(data)) == (400, ("OTSParameterInvalid",
                                              "Parse PBMessage from RawString failed."))
