"""SimpleRowMatrix: GetRange's columnar row block, when the client asks for it.

A GetRange request whose ``data_block_type_hint`` is DBT_SIMPLE_ROW_MATRIX
gets its ``rows`` in this encoding (and ``data_block_type`` set) instead of
PlainBuffer; the Go SDK (``tablestore/matrix.go``) and the Java SDK
(``SimpleRowMatrixBlockParser``) read it.  Written from their decoders; the
prose and a worked example are in docs/formats/simple-row-matrix.md.

Grammar (all integers little-endian; the numbers are the service's and never
renumbered)::

    block   = int32 API_VERSION (0x304D5253, "SRM0")
              int32 data_offset          # where the first TAG_ROW is
              int32 options_offset       # where the options are
              int32 pk_count, int32 attr_count
              name{pk_count + attr_count}            # primary key, then attributes
              TAG_ENTIRE_PRIMARY_KEYS(0x0A) uint8 0|1  # the options, in this order
              TAG_ROW_COUNT(0x03) int32 row_count
              row{row_count}
              TAG_CHECKSUM(0x01) uint8 crc
    name    = int16 length, UTF-8 bytes
    row     = TAG_ROW(0x02) cell{pk_count + attr_count}   # one cell per name, in order
    cell    = VT_INTEGER(0x0) int64 | VT_DOUBLE(0x1) float64 | VT_BOOLEAN(0x2) uint8
            | VT_STRING(0x3) int32 length, UTF-8 | VT_BLOB(0x7) int32 length, bytes
            | VT_NULL(0x6)                        # the row has no such column

``crc`` is PlainBuffer's CRC-8 (plainbuffer.crc8_buffer) over every byte of the
block before it, TAG_CHECKSUM included.  A block carries one value per
column, no timestamps: the newest version a row returns.  The attribute
names are every column any row of the page has, in name order; the primary
key's are the first row's.  No rows: ``b""`` (as PlainBuffer: both SDKs
read an empty ``rows`` as no rows before looking at the encoding).

Python values as PlainBuffer's: int, float, bool, str; ``bytearray`` is a
BLOB and ``bytes`` a STRING (its raw bytes), as the SDK's encoder does.

Pure functions of their arguments; thread-safe.
"""
from __future__ import annotations

import struct

from regions.otsserver.plainbuffer import crc8_buffer

API_VERSION = 0x304D5253
TAG_CHECKSUM = 0x01
TAG_ROW = 0x02
TAG_ROW_COUNT = 0x03
TAG_ENTIRE_PRIMARY_KEYS = 0x0A
VT_INTEGER, VT_DOUBLE, VT_BOOLEAN, VT_STRING, VT_NULL, VT_BLOB = 0x0, 0x1, 0x2, 0x3, 0x6, 0x7

_HEADER = struct.Struct("<iiiii")
_NAME = struct.Struct("<h")
_INT = struct.Struct("<Bq")
_DOUBLE = struct.Struct("<Bd")
_LEN = struct.Struct("<Bi")
_NULL = bytes((VT_NULL,))
_TRUE, _FALSE = bytes((VT_BOOLEAN, 1)), bytes((VT_BOOLEAN, 0))


class MatrixError(ValueError):
    """A value the encoding cannot carry (the message names the column)."""


def _cell(name, value) -> bytes:
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return _TRUE if value else _FALSE
    if isinstance(value, int):
        try:
            return _INT.pack(VT_INTEGER, value)
        except struct.error:
            raise MatrixError("Integer value of column %s is out of int64: %d." % (name, value)) \
                from None
    if isinstance(value, float):
        return _DOUBLE.pack(VT_DOUBLE, value)
    if isinstance(value, str):
        data = value.encode("utf-8")
        return _LEN.pack(VT_STRING, len(data)) + data
    if isinstance(value, bytearray):
        return _LEN.pack(VT_BLOB, len(value)) + bytes(value)
    if isinstance(value, bytes):
        return _LEN.pack(VT_STRING, len(value)) + value
    raise MatrixError("Column %s: a %s cannot be encoded." % (name, type(value).__name__))


def encode_rows(rows) -> bytes:
    """``rows``: ``(primary_key, attribute_columns)`` pairs as returned rows
    carry them (``[(name, value)]`` and ``[(name, value, timestamp)]``, each
    column's versions newest first) -> one SimpleRowMatrix block."""
    if not rows:
        return b""
    pk_names = [name for name, _ in rows[0][0]]
    attr_names = sorted({col[0] for _, attrs in rows for col in attrs})
    entire = 1
    body = []
    for pk, attrs in rows:
        pk_values = dict(pk)
        if len(pk_values) != len(pk_names) or any(n not in pk_values for n in pk_names):
            entire = 0
        newest = {}
        for col in attrs:
            newest.setdefault(col[0], col[1])
        body.append(bytes((TAG_ROW,)))
        body.extend(_cell(n, pk_values.get(n)) for n in pk_names)
        body.extend(_cell(n, newest.get(n)) for n in attr_names)
    names = []
    for name in pk_names + attr_names:
        data = name.encode("utf-8")
        names.append(_NAME.pack(len(data)) + data)
    names = b"".join(names)
    options_offset = _HEADER.size + len(names)
    options = bytes((TAG_ENTIRE_PRIMARY_KEYS, entire, TAG_ROW_COUNT)) + struct.pack("<i", len(rows))
    header = _HEADER.pack(API_VERSION, options_offset + len(options), options_offset,
                          len(pk_names), len(attr_names))
    block = bytearray(header)
    block += names
    block += options
    block += b"".join(body)
    block.append(TAG_CHECKSUM)
    block.append(crc8_buffer(0, block))
    return bytes(block)
