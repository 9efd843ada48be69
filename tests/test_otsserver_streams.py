"""Tablestore Streams over the wire (protocol.py, convert.stream_record,
plainbuffer.encode_record): the stream specification on CreateTable and
UpdateTable, the four stream APIs, and the record bytes read as the Go and
Java SDKs read them (the row extension before the row checksum, which the
Java SDK verifies without it; a deletion's cell type)."""
import struct

import pytest

from regions.otsserver import convert as cv
from regions.otsserver import wire as pb
from regions.otsserver.errors import WireError
from regions.otsserver.plainbuffer import crc8
from regions.otsserver.protocol import TablestoreService
from regions.tablestore import OTSClient

IGNORE = pb.Condition(row_existence=pb.IGNORE)


@pytest.fixture
def service():
    svc = TablestoreService(OTSClient(":memory:"))
    yield svc
    svc.close()


def call(service, api, req):
    resp = getattr(pb, api + "Response").FromString(service.handle(api, req.SerializeToString()))
    assert resp.IsInitialized()
    return resp


def create(service, name="s", stream=True):
    meta = pb.TableMeta(table_name=name)
    meta.primary_key.add(name="pk1", type=pb.STRING)
    req = pb.CreateTableRequest(table_meta=meta, table_options=pb.TableOptions(
        time_to_live=-1, max_versions=3))
    req.reserved_throughput.capacity_unit.read = 0
    req.reserved_throughput.capacity_unit.write = 0
    if stream:
        req.stream_spec.enable_stream = True
        req.stream_spec.expiration_time = 24
    call(service, "CreateTable", req)


def row(key, *cells, delete=False):
    return cv.CODEC.encode_row([("pk1", key)], cells, delete_marker=delete)


# -- a reader of a record, written from the reference (shared/reference/tablestore.md S.3)
def _i32(data, pos):
    return struct.unpack_from("<i", data, pos)[0]


def _cell(data, pos):
    """(name, value bytes or None, op or None, timestamp or None, crc ok, next pos, crc)."""
    assert data[pos] == 0x03 and data[pos + 1] == 0x04
    n = _i32(data, pos + 2)
    name = data[pos + 6:pos + 6 + n]
    pos += 6 + n
    crc = crc8(0, name)
    value = op = ts = None
    if data[pos] == 0x05:
        n = _i32(data, pos + 1)
        value = data[pos + 5:pos + 5 + n]
        crc = crc8(crc, value)
        pos += 5 + n
    if data[pos] == 0x06:
        op = data[pos + 1]
        pos += 2
    if data[pos] == 0x07:
        ts = struct.unpack_from("<q", data, pos + 1)[0]
        crc = crc8(crc, data[pos + 1:pos + 9])
        pos += 9
    if op is not None:
        crc = crc8(crc, bytes((op,)))
    assert data[pos] == 0x0A and data[pos + 1] == crc, "cell checksum"
    return name.decode(), value, op, ts, pos + 2, crc


def read_record(data):
    """(pk [(name, value bytes)], cells [(name, value, op, ts)], (epoch, ts, row index))."""
    assert _i32(data, 0) == 0x75
    pos, row_crc, pk, cells = 4, 0, [], []
    assert data[pos] == 0x01
    pos += 1
    while data[pos] == 0x03:
        name, value, _, _, pos, crc = _cell(data, pos)
        pk.append((name, value))
        row_crc = crc8(row_crc, bytes((crc,)))
    if data[pos] == 0x02:
        pos += 1
        while data[pos] == 0x03:
            name, value, op, ts, pos, crc = _cell(data, pos)
            cells.append((name, value, op, ts))
            row_crc = crc8(row_crc, bytes((crc,)))
    row_crc = crc8(row_crc, b"\x00")                 # no delete marker
    assert data[pos] == 0x0B                         # the extension: not in the checksum
    assert data[pos + 5] == 0x0C and data[pos + 10] == 0x0D
    epoch = _i32(data, pos + 11)
    assert data[pos + 15] == 0x0E
    ts = struct.unpack_from("<q", data, pos + 16)[0]
    assert data[pos + 24] == 0x0F
    index = _i32(data, pos + 25)
    pos += 29
    assert data[pos] == 0x09 and data[pos + 1] == row_crc, "row checksum"
    assert pos + 2 == len(data)
    return pk, cells, (epoch, ts, index)


def test_a_stream_over_the_wire_from_create_table_to_the_records(service):
    create(service)
    streams = call(service, "ListStream", pb.ListStreamRequest(table_name="s")).streams
    assert len(streams) == 1 and streams[0].table_name == "s"
    desc = call(service, "DescribeStream", pb.DescribeStreamRequest(stream_id=streams[0].stream_id))
    assert (desc.expiration_time, desc.stream_status, len(desc.shards)) == (24, pb.STREAM_ACTIVE, 1)
    assert not desc.shards[0].HasField("parent_id")
    it = call(service, "GetShardIterator", pb.GetShardIteratorRequest(
        stream_id=desc.stream_id, shard_id=desc.shards[0].shard_id)).shard_iterator
    call(service, "PutRow", pb.PutRowRequest(table_name="s", row=row("r", ("a", "x"), ("b", 7)),
                                             condition=IGNORE))
    call(service, "UpdateRow", pb.UpdateRowRequest(table_name="s", condition=IGNORE, row_change=row(
        "r", ("a", None, 5, 3), ("b", None, None, 1), ("c", 1.5))))
    call(service, "DeleteRow", pb.DeleteRowRequest(table_name="s", condition=IGNORE,
                                                   primary_key=row("r", delete=True)))
    resp = call(service, "GetStreamRecord", pb.GetStreamRecordRequest(shard_iterator=it, limit=2))
    assert [r.action_type for r in resp.stream_records] == [pb.PUT_ROW, pb.UPDATE_ROW]
    assert resp.may_more_record and resp.consumed.capacity_unit.read >= 1
    pk, cells, (epoch, ts, index) = read_record(resp.stream_records[0].record)
    assert pk == [("pk1", b"\x03\x01\x00\x00\x00r")]
    assert [(n, op, t is not None) for n, _, op, t in cells] == [("a", None, True), ("b", None, True)]
    assert epoch == 0 and ts > 0 and index == 0
    _, cells, _ = read_record(resp.stream_records[1].record)
    # one version deleted: its op and timestamp, no value; all versions: op only
    assert [(n, v, op, t) for n, v, op, t in cells[:2]] == [("a", None, 3, 5), ("b", None, 1, None)]
    assert cells[2][0] == "c" and cells[2][2] is None
    resp = call(service, "GetStreamRecord",
                pb.GetStreamRecordRequest(shard_iterator=resp.next_shard_iterator))
    assert [r.action_type for r in resp.stream_records] == [pb.DELETE_ROW]
    assert read_record(resp.stream_records[0].record)[1] == [] and not resp.may_more_record
    again = call(service, "GetStreamRecord",
                 pb.GetStreamRecordRequest(shard_iterator=resp.next_shard_iterator))
    assert len(again.stream_records) == 0 and again.next_shard_iterator == resp.next_shard_iterator


def test_update_table_enables_and_disables_and_describe_table_tells(service):
    create(service, stream=False)
    assert call(service, "ListStream", pb.ListStreamRequest()).streams == []
    enable = pb.UpdateTableRequest(table_name="s", stream_spec=pb.StreamSpecification(
        enable_stream=True, expiration_time=168, columns_to_get=["c1", "c2"]))
    details = call(service, "UpdateTable", enable).stream_details
    assert details.enable_stream and details.expiration_time == 168
    desc = call(service, "DescribeTable", pb.DescribeTableRequest(table_name="s")).stream_details
    assert (desc.stream_id, desc.last_enable_time > 0, list(desc.columns_to_get)) == \
        (details.stream_id, True, ["c1", "c2"])
    with pytest.raises(WireError) as e:            # disabling with an expiration time
        service.handle("UpdateTable", pb.UpdateTableRequest(
            table_name="s", stream_spec=pb.StreamSpecification(
                enable_stream=False, expiration_time=1)).SerializeToString())
    assert "Expiration time is invalid when enableStream is false" in str(e.value)
    call(service, "UpdateTable", pb.UpdateTableRequest(
        table_name="s", stream_spec=pb.StreamSpecification(enable_stream=False)))
    desc = call(service, "DescribeTable", pb.DescribeTableRequest(table_name="s")).stream_details
    assert not desc.enable_stream and not desc.HasField("stream_id")


@pytest.mark.parametrize("api, req, code", [
    ("DescribeStream", pb.DescribeStreamRequest(stream_id="missing"), "OTSObjectNotExist"),
    ("GetShardIterator", pb.GetShardIteratorRequest(stream_id="missing", shard_id="1"),
     "OTSObjectNotExist"),
    ("GetStreamRecord", pb.GetStreamRecordRequest(shard_iterator="garbage"), "OTSParameterInvalid"),
])
def test_bad_stream_requests_get_the_services_errors(service, api, req, code):
    create(service)
    with pytest.raises(WireError) as e:
        service.handle(api, req.SerializeToString())
    assert e.value.code == code


@pytest.mark.parametrize("length, readable", [(238, True), (239, False), (255, False)])
def test_the_stream_of_a_table_named_over_238_characters_is_not_read(service, length, readable):
    """As the Java SDK's APITest.testStreamWithLongTableName saw the service
    do: a table of any valid name gets a stream that is listed, described
    and iterated, but GetStreamRecord refuses to read it when the name is
    over 238 characters: OTSParameterInvalid "Invalid stream id..."."""
    name = "a" * length
    create(service, name)
    stream_id = call(service, "ListStream", pb.ListStreamRequest(table_name=name)).streams[0]
    desc = call(service, "DescribeStream", pb.DescribeStreamRequest(
        stream_id=stream_id.stream_id))
    it = call(service, "GetShardIterator", pb.GetShardIteratorRequest(
        stream_id=desc.stream_id, shard_id=desc.shards[0].shard_id)).shard_iterator
    call(service, "PutRow", pb.PutRowRequest(table_name=name, row=row("r", ("a", "x")),
                                             condition=IGNORE))
    req = pb.GetStreamRecordRequest(shard_iterator=it)
    if readable:
        assert len(call(service, "GetStreamRecord", req).stream_records) == 1
        return
    with pytest.raises(WireError) as e:
        service.handle("GetStreamRecord", req.SerializeToString())
    assert e.value.code == "OTSParameterInvalid" and str(e.value.message).startswith(
        "Invalid stream id")
