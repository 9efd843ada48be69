"""PlainBuffer codec: golden bytes from the format description, then the SDK as oracle."""
import struct

import pytest
import tablestore  # the official SDK, installed by the test extra: our oracle
from tablestore.plainbuffer.plain_buffer_builder import PlainBufferBuilder
from tablestore.plainbuffer.plain_buffer_coded_stream import PlainBufferCodedInputStream
from tablestore.plainbuffer.plain_buffer_stream import PlainBufferInputStream

from regions.otsserver.plainbuffer import (
    DELETE_ALL_VERSION, DELETE_ONE_VERSION, INCREMENT, Cell, Markers,
    PlainBufferCodec, PlainBufferError, crc8,
)

MARKERS = Markers(tablestore.INF_MIN, tablestore.INF_MAX, tablestore.PK_AUTO_INCR)
CODEC = PlainBufferCodec(MARKERS, compiled=True)
PURE = PlainBufferCodec(MARKERS, compiled=False)


@pytest.fixture(params=[True, False], ids=["compiled", "pure"])
def codec(request):
    """Encoding tests run on the C encoder and on the Python reference alike."""
    return PlainBufferCodec(MARKERS, compiled=request.param)


def bitwise_crc8(data, crc=0):
    """CRC-8, poly 0x07, init 0, no reflection: the textbook shift loop (no table)."""
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def i32(n):
    return struct.pack("<i", n)


def i64(n):
    return struct.pack("<q", n)


# ------------------------------------------------------------------ CRC-8

def test_crc8_matches_the_catalogued_check_value_of_crc8_atm():
    assert crc8(0, b"123456789") == 0xF4
    assert bitwise_crc8(b"123456789") == 0xF4


def test_crc8_table_agrees_with_the_bitwise_definition():
    for data in (b"", b"\x00", b"\xff", bytes(range(256)), b"pk"):
        assert crc8(0, data) == bitwise_crc8(data)


# ------------------------------------------------------------ golden bytes

WORKED_EXAMPLE = bytes.fromhex(
    "75000000" "01"
    "03" "04" "02000000" "706b" "05" "06000000" "03" "01000000" "61" "0a" "d4"
    "02"
    "03" "04" "01000000" "63" "05" "02000000" "02" "01" "0a" "55"
    "09" "c9")


def test_put_row_worked_example_encodes_byte_for_byte(codec):
    assert codec.encode_row([("pk", "a")], [("c", True)]) == WORKED_EXAMPLE


def test_put_row_worked_example_decodes():
    row = CODEC.decode_row(WORKED_EXAMPLE)
    assert row.primary_key == [("pk", "a")]
    assert row.cells == [Cell("c", True, None, None)]
    assert row.delete_marker is False


def cell_bytes(name, variant=None, op=None, ts=None):
    """Expected bytes of one cell, checksum by the bitwise CRC in checksum order."""
    out = b"\x03\x04" + i32(len(name)) + name
    crc = bitwise_crc8(name)
    if variant is not None:
        out += b"\x05" + i32(len(variant)) + variant
        crc = bitwise_crc8(variant, crc)
    if op is not None:
        out += b"\x06" + bytes([op])
    if ts is not None:
        out += b"\x07" + i64(ts)
        crc = bitwise_crc8(i64(ts), crc)
    if op is not None:
        crc = bitwise_crc8(bytes([op]), crc)
    return out + b"\x0a" + bytes([crc]), crc


def row_bytes(pk_cells, attr_cells=(), delete=False):
    out = b"\x75\x00\x00\x00\x01"
    crc = 0
    for cb, c in pk_cells:
        out += cb
        crc = bitwise_crc8(bytes([c]), crc)
    if attr_cells:
        out += b"\x02"
        for cb, c in attr_cells:
            out += cb
            crc = bitwise_crc8(bytes([c]), crc)
    if delete:
        out += b"\x08"
    crc = bitwise_crc8(b"\x01" if delete else b"\x00", crc)
    return out + b"\x09" + bytes([crc])


def test_every_variant_type_and_timestamp_golden(codec):
    pk = [cell_bytes(b"id", b"\x00" + i64(-2)), cell_bytes(b"b", b"\x07" + i32(2) + b"\x00\xff")]
    attrs = [
        cell_bytes(b"d", b"\x01" + struct.pack("<d", 1.5), ts=1700000000000),
        cell_bytes(b"s", b"\x03" + i32(3) + "\u00e9a".encode()),
        cell_bytes(b"f", b"\x02\x00", ts=5),
    ]
    expected = row_bytes(pk, attrs)
    got = codec.encode_row([("id", -2), ("b", bytearray(b"\x00\xff"))],
                           [("d", 1.5, 1700000000000), ("s", "\u00e9a"), ("f", False, 5)])
    assert got == expected
    row = codec.decode_row(expected)
    assert row.primary_key == [("id", -2), ("b", bytearray(b"\x00\xff"))]
    assert row.cells == [Cell("d", 1.5, 1700000000000), Cell("s", "\u00e9a"), Cell("f", False, 5)]


def test_update_cell_types_golden_timestamp_checksummed_before_op(codec):
    pk = [cell_bytes(b"k", b"\x00" + i64(1))]
    attrs = [
        cell_bytes(b"a", op=DELETE_ONE_VERSION, ts=77),
        cell_bytes(b"b", op=DELETE_ALL_VERSION),
        cell_bytes(b"c", b"\x00" + i64(3), op=INCREMENT),
    ]
    expected = row_bytes(pk, attrs)
    got = codec.encode_row([("k", 1)], [Cell("a", None, 77, DELETE_ONE_VERSION),
                                        Cell("b", None, None, DELETE_ALL_VERSION),
                                        Cell("c", 3, None, INCREMENT)])
    assert got == expected
    assert codec.decode_row(expected).cells == [
        Cell("a", None, 77, DELETE_ONE_VERSION), Cell("b", None, None, DELETE_ALL_VERSION),
        Cell("c", 3, None, INCREMENT)]


def test_delete_marker_and_inf_markers_golden(codec):
    pk = [cell_bytes(b"a", b"\x09"), cell_bytes(b"b", b"\x0a"), cell_bytes(b"c", b"\x0b")]
    expected = row_bytes(pk, delete=True)
    got = codec.encode_row([("a", tablestore.INF_MIN), ("b", tablestore.INF_MAX),
                            ("c", tablestore.PK_AUTO_INCR)], delete_marker=True)
    assert got == expected
    row = codec.decode_row(expected)
    assert row.delete_marker is True
    assert [v for _, v in row.primary_key] == [tablestore.INF_MIN, tablestore.INF_MAX,
                                               tablestore.PK_AUTO_INCR]


def test_many_rows_share_one_header_and_empty_is_empty(codec):
    one = codec.encode_row([("k", 1)], [("v", "x", 9)])
    two = codec.encode_row([("k", 2)], [("v", "y", 9)])
    assert codec.encode_rows([([("k", 1)], [("v", "x", 9)]), ([("k", 2)], [("v", "y", 9)])]) \
        == one + two[4:]
    assert codec.encode_rows([]) == b""
    assert codec.decode_rows(b"") == []
    assert len(codec.decode_rows(one + two[4:])) == 2


def test_bare_variant_round_trip_and_golden():
    assert CODEC.encode_variant("ab") == bytes.fromhex("03020000006162")
    assert CODEC.encode_variant(tablestore.INF_MAX) == b"\x0a"
    for v in (0, -1, 2 ** 63 - 1, 1.25, True, "x", bytearray(b"\x01"), tablestore.INF_MIN):
        assert CODEC.decode_bare_variant(CODEC.encode_variant(v)) == v
    assert CODEC.decode_bare_variant(b"\x03\x01\x00\x00\x00z") == "z"


# ------------------------------------------------------------- corruption

@pytest.mark.parametrize("index", range(4, len(WORKED_EXAMPLE)))
def test_any_single_byte_flip_is_rejected(index):
    data = bytearray(WORKED_EXAMPLE)
    data[index] ^= 0x01
    with pytest.raises(PlainBufferError):
        CODEC.decode_row(bytes(data))


def test_checksum_mismatch_message_uses_tablestore_wording():
    data = bytearray(WORKED_EXAMPLE)
    data[-1] ^= 0xFF
    with pytest.raises(PlainBufferError, match="checksum is mismatch"):
        CODEC.decode_row(bytes(data))


def test_bad_header_truncation_missing_checksum_and_trailing_garbage():
    with pytest.raises(PlainBufferError, match="mismatch header"):
        CODEC.decode_row(b"\x76" + WORKED_EXAMPLE[1:])
    for cut in (3, 10, len(WORKED_EXAMPLE) - 1):
        with pytest.raises(PlainBufferError):
            CODEC.decode_row(WORKED_EXAMPLE[:cut])
    with pytest.raises(PlainBufferError, match="missing checksum"):
        CODEC.decode_row(WORKED_EXAMPLE[:-2])
    with pytest.raises(PlainBufferError):
        CODEC.decode_row(WORKED_EXAMPLE + b"\x01")


def test_encoder_rejects_what_the_format_cannot_hold(codec):
    with pytest.raises(PlainBufferError, match="int64"):
        codec.encode_row([("k", 2 ** 63)])
    with pytest.raises(PlainBufferError, match="type"):
        codec.encode_row([("k", object())])
    with pytest.raises(PlainBufferError, match="no value"):
        codec.encode_row([("k", None)])


# ------------------------------------------------------- the SDK as oracle

PK = [("gid", 7), ("uid", "u\u00e9"), ("bin", bytearray(b"\x00\x01"))]
ATTRS = [("i", 1), ("f", -0.5), ("t", True), ("s", "hello"), ("raw", b"as-string"),
         ("blob", bytearray(b"\xff" * 3)), ("ts", "v", 1600000000000)]


def sdk_read(data):
    return PlainBufferCodedInputStream(PlainBufferInputStream(bytes(data))).read_row()


def test_sdk_put_row_bytes_equal_ours(codec):
    sdk = bytes(PlainBufferBuilder.serialize_for_put_row(PK, ATTRS))
    assert codec.encode_row(PK, ATTRS) == sdk
    row = codec.decode_row(sdk)
    assert row.primary_key == PK
    assert [c.name for c in row.cells] == [a[0] for a in ATTRS]
    assert row.cells[4].value == "as-string"  # the SDK sends bytes as VT_STRING


def test_sdk_update_row_decodes_with_ops_and_timestamps(codec):
    update = {"PUT": [("a", 1), ("b", "x", 123)], "DELETE": [("c", None, 456)],
              "DELETE_ALL": ["d"], "INCREMENT": [("e", 5)]}
    sdk = bytes(PlainBufferBuilder.serialize_for_update_row(PK, update))
    row = codec.decode_row(sdk)
    assert row.cells == [Cell("a", 1), Cell("b", "x", 123), Cell("c", None, 456, DELETE_ONE_VERSION),
                         Cell("d", None, None, DELETE_ALL_VERSION), Cell("e", 5, None, INCREMENT)]
    assert codec.encode_row(row.primary_key, row.cells) == sdk


def test_sdk_delete_and_pk_only_rows(codec):
    sdk_delete = bytes(PlainBufferBuilder.serialize_for_delete_row(PK))
    row = codec.decode_row(sdk_delete)
    assert row.delete_marker and row.primary_key == PK and row.cells == []
    assert codec.encode_row(PK, delete_marker=True) == sdk_delete
    bounds = [("gid", tablestore.INF_MIN), ("uid", tablestore.INF_MAX)]
    assert codec.encode_row(bounds) == bytes(PlainBufferBuilder.serialize_primary_key(bounds))


def test_sdk_reads_our_response_rows(codec):
    pk, attrs = sdk_read(codec.encode_row(PK, [("a", 1, 10), ("b", 2.5, 11), ("c", bytearray(b"z"), 12)]))
    assert pk == PK
    assert attrs == [("a", 1, 10), ("b", 2.5, 11), ("c", bytearray(b"z"), 12)]
    rows = PlainBufferCodedInputStream(PlainBufferInputStream(bytes(codec.encode_rows(
        [([("k", i)], [("v", str(i), 5)]) for i in range(3)])))).read_rows()
    assert [(r.primary_key, r.attribute_columns) for r in rows] == [
        ([("k", i)], [("v", str(i), 5)]) for i in range(3)]


def test_a_row_without_primary_key_has_no_tag_row_pk(codec):
    """An RT_AFTER_MODIFY row (the service sends its columns alone): the same
    bytes as a row with an empty key, less the TAG_ROW_PK byte, which no
    checksum covers."""
    cells = [("count", 3, 10), ("n", 1, 11)]
    bare = codec.encode_row(None, cells)
    with_tag = codec.encode_row([], cells)
    assert bare[4] == 0x02 and with_tag[4] == 0x01
    assert bare == with_tag[:4] + with_tag[5:]
    assert sdk_read(with_tag) == ([], cells)


def test_sdk_filter_value_is_our_bare_variant():
    for v in ("ab", 3, 2.0, False, bytearray(b"q")):
        assert bytes(PlainBufferBuilder.serialize_column_value(v)) == CODEC.encode_variant(v)


# ------------------------------------------------- C encoder vs the reference

def test_the_compiled_encoder_is_in_use():
    import importlib.machinery
    from regions.otsserver import _plainbuffer
    from regions import PUREPYTHON
    assert _plainbuffer.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    assert CODEC.compiled and not PURE.compiled
    # the default follows the switch (lsm/purepython.py; tests/test_purepython.py)
    assert PlainBufferCodec(MARKERS).compiled is not PUREPYTHON


def test_the_wire_numbers_are_stated_once_for_both_encoders():
    """plainlayout.py is the one statement of the wire numbers: plainbuffer.py
    has them from it, and the compiled encoder reads them from it at import
    (no number of the format is written in ext/)."""
    import pathlib
    import re

    from regions.otsserver import _plainbuffer, plainbuffer, plainlayout
    names = [n for n in vars(plainlayout) if n.isupper()]
    assert {"HEADER", "TAG_CELL_CHECKSUM", "VT_BLOB", "INCREMENT"} <= set(names)
    assert all(getattr(plainbuffer, n) == getattr(plainlayout, n) for n in names)
    assert _plainbuffer._wire is plainlayout
    source = (pathlib.Path(__file__).resolve().parent.parent / "ext" / "regions" / "otsserver"
              / "_plainbuffer.pyx").read_text()
    for name in names:
        for m in re.finditer(r"\b%s\s*=\s*(\S+)" % name, source):
            assert m.group(1) == "_wire." + name, m.group(0)


def _random_value(rnd, markers=False):
    kind = rnd.randrange(9 if markers else 7)
    if kind == 0:
        return rnd.choice([0, -1, 1, 2 ** 63 - 1, -2 ** 63, rnd.getrandbits(63) - 2 ** 62])
    if kind == 1:
        return rnd.choice([0.0, -0.0, 1.5, float("inf"), rnd.random() * 1e300])
    if kind == 2:
        return rnd.random() < 0.5
    if kind == 3:
        return "".join(rnd.choice("ab\u00e9\u4e2d\U0001f600") for _ in range(rnd.randrange(40)))
    if kind == 4:
        return bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(300)))
    if kind == 5:
        return bytearray(rnd.getrandbits(8) for _ in range(rnd.randrange(20)))
    if kind == 6:
        return ""
    return rnd.choice([tablestore.INF_MIN, tablestore.INF_MAX, tablestore.PK_AUTO_INCR])


def _random_row(rnd):
    pk = [("k%d" % i, _random_value(rnd, markers=True)) for i in range(rnd.randrange(1, 4))]
    cells = []
    for i in range(rnd.randrange(6)):
        name = rnd.choice(["c", "col\u00e9", "x" * 300, ""]) + str(i)
        op = rnd.choice([None, None, DELETE_ALL_VERSION, DELETE_ONE_VERSION, INCREMENT])
        value = None if op in (DELETE_ALL_VERSION, DELETE_ONE_VERSION) else _random_value(rnd)
        ts = rnd.choice([None, 0, 1700000000123, 2 ** 63 - 1, -5])
        cells.append(Cell(name, value, ts, op)[:rnd.randrange(2, 5)] if op is None
                     else Cell(name, value, ts, op))
    return pk, cells


def test_compiled_encoder_writes_the_reference_bytes_on_random_rows():
    import random
    rnd = random.Random(20261122)
    for _ in range(400):
        rows = [_random_row(rnd) for _ in range(rnd.randrange(1, 5))]
        expected = PURE.encode_rows(rows)
        assert CODEC.encode_rows(rows) == expected
        pk, cells = rows[0]
        delete = rnd.random() < 0.3
        assert CODEC.encode_row(pk, cells, delete) == PURE.encode_row(pk, cells, delete)


def test_compiled_encoder_hands_odd_input_to_the_reference():
    import enum

    class Color(enum.IntEnum):
        RED = 3
    # int subclasses and tuples of other lengths are the reference's to judge
    assert CODEC.encode_row([("k", Color.RED)]) == PURE.encode_row([("k", 3)])
    for bad in ([("k", 1 << 64)], [("k", 1.5j)], [(b"k", 1)]):
        with pytest.raises((PlainBufferError, AttributeError)) as compiled_err:
            CODEC.encode_row(bad)
        with pytest.raises(type(compiled_err.value)) as pure_err:
            PURE.encode_row(bad)
        assert str(compiled_err.value) == str(pure_err.value)
    with pytest.raises(PlainBufferError, match="unknown cell type"):
        CODEC.encode_row([("k", 1)], [("c", 1, None, 99)])
