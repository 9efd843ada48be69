"""Secondary indexes over the wire: CreateTable's ``index_metas``, CreateIndex,
DropIndex and DescribeTable's ``index_metas`` (regions.otsserver.protocol and
convert), decoded and encoded on the messages alone.
"""
import pytest
from google.protobuf import unknown_fields
from tablestore.protobuf import table_store_pb2 as pb

from regions.otsserver import convert as cv
from regions.otsserver.errors import WireError
from regions.otsserver.protocol import TablestoreService
from regions.tablestore import metadata as md

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
    values = [f.data for f in unknown_fields.UnknownFieldSet(msg) if f.field_number == 6]
    assert len(values) <= 1
    return values[0] if values else None


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
