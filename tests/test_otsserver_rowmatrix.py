"""SimpleRowMatrix (rowmatrix.py, docs/formats/simple-row-matrix.md): GetRange
answers in it when asked (data_block_type_hint), checked by a decoder written
from the format note, as strict as the Java SDK's SimpleRowMatrixBlockParser
(option order, checksum, one cell per name) and reading rows as the Go SDK's
parseMatrixRows does (a VT_NULL attribute is no column)."""
import random
import struct

import pytest

from regions.otsserver import _plainbuffer, plainbuffer, rowmatrix
from regions.otsserver import convert as cv
from regions.otsserver import wire as pb
from regions.otsserver.errors import WireError
from regions.otsserver.protocol import TablestoreService
from regions.tablestore import (INF_MAX, INF_MIN, OTSClient, PutRowItem, Row, Condition,
                                RowExistenceExpectation, TableInBatchWriteRowItem, TableMeta,
                                TableOptions, BatchWriteRowRequest)


def decode(block: bytes):
    """(pk names, attribute names, entire-PK flag, rows as (pk, attrs) lists) of a block."""
    assert len(block) >= 20 + 7 + 2
    version, data_offset, options_offset, pk_count, attr_count = struct.unpack_from("<iiiii", block)
    assert version == 0x304D5253
    assert block[-2] == 0x01                                          # TAG_CHECKSUM
    assert block[-1] == plainbuffer.crc8(0, block[:-1])
    pos, names = 20, []
    for _ in range(pk_count + attr_count):
        (n,) = struct.unpack_from("<h", block, pos)
        names.append(block[pos + 2:pos + 2 + n].decode("utf-8"))
        pos += 2 + n
    assert pos == options_offset
    assert block[pos] == 0x0A and block[pos + 1] in (0, 1)          # TAG_ENTIRE_PRIMARY_KEYS
    entire = block[pos + 1] == 1
    assert block[pos + 2] == 0x03                                     # TAG_ROW_COUNT
    (row_count,) = struct.unpack_from("<i", block, pos + 3)
    pos += 7
    assert pos == data_offset
    rows = []
    for _ in range(row_count):
        assert block[pos] == 0x02                                     # TAG_ROW
        pos += 1
        values = []
        for _ in names:
            kind = block[pos]
            pos += 1
            if kind == 0x0:
                values.append(struct.unpack_from("<q", block, pos)[0])
                pos += 8
            elif kind == 0x1:
                values.append(struct.unpack_from("<d", block, pos)[0])
                pos += 8
            elif kind == 0x2:
                assert block[pos] in (0, 1)
                values.append(block[pos] == 1)
                pos += 1
            elif kind in (0x3, 0x7):
                (n,) = struct.unpack_from("<i", block, pos)
                raw = block[pos + 4:pos + 4 + n]
                values.append(raw.decode("utf-8") if kind == 0x3 else bytearray(raw))
                pos += 4 + n
            else:
                assert kind == 0x6
                values.append(None)
        pk = list(zip(names[:pk_count], values[:pk_count]))
        attrs = [(n, v) for n, v in zip(names[pk_count:], values[pk_count:]) if v is not None]
        rows.append((pk, attrs))
    assert pos == len(block) - 2                                      # nothing after the rows
    return names[:pk_count], names[pk_count:], entire, rows


# ------------------------------------------------------------ the encoder

def test_every_value_type_and_missing_cells_round_trip():
    rows = [([("s", "a"), ("b", bytearray(b"\x00\xff")), ("i", -5)],
             [("str", "héllo", 1), ("int", 1 << 62, 1), ("bool", True, 1), ("dbl", 2.5, 1),
              ("bin", bytearray(b"\x01\x02"), 1)]),
            ([("s", "b"), ("b", bytearray()), ("i", 0)], [("bool", False, 1)]),
            ([("s", ""), ("b", bytearray(b"z")), ("i", 1)], [])]
    pks, attrs, entire, got = decode(rowmatrix.encode_rows(rows))
    assert pks == ["s", "b", "i"] and attrs == ["bin", "bool", "dbl", "int", "str"] and entire
    assert got == [(pk, sorted((n, v) for n, v, _ in cols)) for pk, cols in rows]


def test_a_block_carries_the_newest_version_of_each_column():
    rows = [([("k", 1)], [("c", "new", 20), ("c", "old", 10)])]
    assert decode(rowmatrix.encode_rows(rows))[3] == [([("k", 1)], [("c", "new")])]


def test_the_worked_example_of_the_format_note_is_these_bytes():
    block = rowmatrix.encode_rows([([("pk", 1)], [("c", "x", 5)]), ([("pk", 2)], [])])
    assert block.hex(" ") == (
        "53 52 4d 30 22 00 00 00 1b 00 00 00 01 00 00 00 01 00 00 00 "
        "02 00 70 6b 01 00 63 "
        "0a 01 03 02 00 00 00 "
        "02 00 01 00 00 00 00 00 00 00 03 01 00 00 00 78 "
        "02 00 02 00 00 00 00 00 00 00 06 "
        "01 " + "%02x" % block[-1])
    assert block[-1] == plainbuffer.crc8(0, block[:-1])


def test_no_rows_is_an_empty_block():
    assert rowmatrix.encode_rows([]) == b""


@pytest.mark.parametrize("value", [object(), 1 << 63])
def test_a_value_the_encoding_cannot_carry_is_named(value):
    with pytest.raises(rowmatrix.MatrixError, match="c"):
        rowmatrix.encode_rows([([("k", 1)], [("c", value, 1)])])


def test_the_c_checksum_is_plainbuffers():
    rng = random.Random(7)
    for n in (0, 1, 100, 5000):
        data = bytes(rng.randrange(256) for _ in range(n))
        for crc in (0, 0x5A):
            assert _plainbuffer.crc8(crc, data) == plainbuffer.crc8(crc, data)
            assert _plainbuffer.crc8(crc, bytearray(data)) == plainbuffer.crc8(crc, data)


# ------------------------------------------------------------ over the wire

@pytest.fixture
def service():
    client = OTSClient(":memory:")
    client.create_table(TableMeta("t", [("s", "STRING"), ("b", "BINARY"), ("i", "INTEGER")]),
                        TableOptions(), split_points=["m"])
    svc = TablestoreService(client)
    yield svc
    svc.close()


def fill(service, n, seed=1):
    rng = random.Random(seed)
    expect = {}
    items = []
    for k in range(n):
        pk = [("s", "%s%03d" % (rng.choice("aq"), k)), ("b", bytearray(rng.randbytes(rng.randrange(5)))),
              ("i", rng.randrange(-10, 10))]
        cols = [("string", "v" * rng.randrange(50)), ("boolean", rng.random() < 0.5),
                ("double", rng.random()), ("blob", bytearray(rng.randbytes(rng.randrange(1, 40))))]
        if k % 10:
            cols.append(("integer", rng.randrange(101)))         # every tenth row: no such column
        items.append(PutRowItem(Row(pk, cols), Condition(RowExistenceExpectation.IGNORE)))
        expect[(pk[0][1], bytes(pk[1][1]), pk[2][1])] = sorted(cols)
    for start in range(0, n, 200):
        req = BatchWriteRowRequest()
        req.add(TableInBatchWriteRowItem("t", items[start:start + 200]))
        service.client.batch_write_row(req)
    return expect


def get_range(service, start, limit, hint=None, columns=()):
    req = pb.GetRangeRequest(table_name="t", direction=pb.FORWARD, max_versions=1, limit=limit,
                             inclusive_start_primary_key=cv.CODEC.encode_row(start),
                             exclusive_end_primary_key=cv.CODEC.encode_row(
                                 [("s", INF_MAX), ("b", INF_MAX), ("i", INF_MAX)]))
    req.columns_to_get.extend(columns)
    if hint is not None:
        req.data_block_type_hint = hint
    resp = pb.GetRangeResponse()
    resp.ParseFromString(service.handle("GetRange", req.SerializeToString()))
    assert resp.IsInitialized()
    return resp


def test_get_range_pages_through_a_table_in_the_matrix_as_the_go_sdks_fuzzy_test(service):
    expect = fill(service, 300)
    start = [("s", INF_MIN), ("b", INF_MIN), ("i", INF_MIN)]
    pages = 0
    while True:
        resp = get_range(service, start, 70, pb.DBT_SIMPLE_ROW_MATRIX,
                         ["string", "integer", "boolean", "double", "blob"])
        assert resp.HasField("data_block_type") and resp.data_block_type == pb.DBT_SIMPLE_ROW_MATRIX
        pks, _, entire, rows = decode(resp.rows)
        assert pks == ["s", "b", "i"] and entire
        for pk, attrs in rows:
            key = (pk[0][1], bytes(pk[1][1]), pk[2][1])
            assert sorted(attrs) == expect.pop(key)
        pages += 1
        if not resp.next_start_primary_key:
            break
        start = cv.CODEC.decode_row(resp.next_start_primary_key).primary_key
    assert expect == {} and pages == 5


def test_the_matrix_holds_the_rows_plain_buffer_holds(service):
    fill(service, 50, seed=3)
    start = [("s", INF_MIN), ("b", INF_MIN), ("i", INF_MIN)]
    plain = get_range(service, start, 5000)
    matrix = get_range(service, start, 5000, pb.DBT_SIMPLE_ROW_MATRIX)
    assert not plain.HasField("data_block_type")
    assert (plain.consumed, plain.next_start_primary_key) == \
        (matrix.consumed, matrix.next_start_primary_key)
    assert [(r.primary_key, sorted((c.name, c.value) for c in r.cells))
            for r in cv.CODEC.decode_rows(plain.rows)] == decode(matrix.rows)[3]


def test_an_empty_range_in_the_matrix_is_no_rows(service):
    resp = get_range(service, [("s", INF_MIN), ("b", INF_MIN), ("i", INF_MIN)], 10,
                     pb.DBT_SIMPLE_ROW_MATRIX)
    assert resp.rows == b"" and resp.data_block_type == pb.DBT_SIMPLE_ROW_MATRIX


def test_an_unknown_block_type_hint_is_answered_in_plain_buffer(service):
    fill(service, 3)
    body = pb.GetRangeRequest(
        table_name="t", direction=pb.FORWARD, max_versions=1,
        inclusive_start_primary_key=cv.CODEC.encode_row([("s", INF_MIN), ("b", INF_MIN),
                                                         ("i", INF_MIN)]),
        exclusive_end_primary_key=cv.CODEC.encode_row([("s", INF_MAX), ("b", INF_MAX),
                                                       ("i", INF_MAX)])).SerializeToString()
    resp = pb.GetRangeResponse.FromString(service.handle("GetRange", body + bytes((15 << 3, 7))))
    assert len(cv.CODEC.decode_rows(resp.rows)) == 3


def test_a_bad_request_is_still_refused_by_name(service):
    req = pb.GetRangeRequest(table_name="nope", direction=pb.FORWARD, max_versions=1,
                             inclusive_start_primary_key=cv.CODEC.encode_row([("s", INF_MIN)]),
                             exclusive_end_primary_key=cv.CODEC.encode_row([("s", INF_MAX)]),
                             data_block_type_hint=pb.DBT_SIMPLE_ROW_MATRIX)
    with pytest.raises(WireError) as e:
        service.handle("GetRange", req.SerializeToString())
    assert e.value.code == "OTSObjectNotExist"
