"""PlainBuffer: the row encoding Tablestore carries inside its protobuf messages.

Written from the format description (docs/otsserver.md and the team's
reference, section 3.6); the official SDK is used only as a test oracle.

Grammar (all integers little-endian; numbers below are on the wire and must
never be renumbered)::

    plainbuffer = int32 header (0x75), row+        # one header, even for many rows
    row         = TAG_ROW_PK(0x01) cell*              # (absent: see encode_row)
                  [TAG_ROW_DATA(0x02) cell*]
                  [TAG_DELETE_ROW_MARKER(0x08)]
                  TAG_ROW_CHECKSUM(0x09) uint8 crc
    cell        = TAG_CELL(0x03)
                  TAG_CELL_NAME(0x04) int32 len, name bytes (UTF-8, no type byte)
                  [TAG_CELL_VALUE(0x05) int32 len, variant]
                  [TAG_CELL_TYPE(0x06) uint8 op]
                  [TAG_CELL_TIMESTAMP(0x07) int64 ms]
                  TAG_CELL_CHECKSUM(0x0A) uint8 crc
    variant     = VT_INTEGER(0x0) int64 | VT_DOUBLE(0x1) float64
                | VT_BOOLEAN(0x2) uint8 | VT_STRING(0x3) int32 len, UTF-8
                | VT_BLOB(0x7) int32 len, bytes | VT_INF_MIN(0x9)
                | VT_INF_MAX(0xA) | VT_AUTO_INCREMENT(0xB)
    op          = DELETE_ALL_VERSION(0x1) | DELETE_ONE_VERSION(0x3) | INCREMENT(0x4)

Names and VT_STRING payloads must be UTF-8; the decoder refuses others with
``NotUtf8`` (the service refuses such a request, so nothing undecodable is
ever stored).

Checksums are CRC-8 (polynomial x^8+x^2+x+1, init 0, no reflection, no final
xor).  A cell's checksum covers, in this order: the name bytes, the variant
bytes exactly as on the wire, the timestamp's 8 bytes if present, then the op
byte if present (timestamp before op: the reverse of the wire order).  A row's
checksum folds in each cell checksum byte (primary-key cells first), then one
byte: 1 with a delete marker, else 0.

A "bare variant" (the ``column_value`` of a filter, the ``begin``/``end`` of a
CreateTable partition) is a variant alone, with no tag and no length.

Python values: int <-> VT_INTEGER, float <-> VT_DOUBLE, bool <-> VT_BOOLEAN,
str <-> VT_STRING, bytearray <-> VT_BLOB.  Like the SDK, the encoder sends
``bytes`` as VT_STRING (its raw bytes).  VT_INF_MIN, VT_INF_MAX and
VT_AUTO_INCREMENT map to the marker objects a ``PlainBufferCodec`` is built
with (the data API's ``INF_MIN``, ``INF_MAX``, ``PK_AUTO_INCR`` classes),
compared by identity.

Encoding runs in C (``regions.otsserver._plainbuffer``, built from
ext/regions/otsserver/_plainbuffer.pyx) when the codec is built with
``compiled=True``: it writes the same bytes, and hands anything unusual (an
error to report, a value type it does not know) back to the Python encoder
here, which stays the reference.  Decoding is Python.  The fork is here, in
one place for the package (``compiled`` for rows, ``crc8_buffer`` for a
whole buffer), and LSM_REGIONS_PUREPYTHON (lsm/purepython.py) sends both
down the Python path: a codec's ``compiled`` defaults to ``not
PUREPYTHON``.

Thread-safety: a codec holds no mutable state; share one freely.
"""
from __future__ import annotations

import struct
from typing import NamedTuple, Sequence

from regions import PUREPYTHON
from regions.otsserver import _plainbuffer
from regions.otsserver.errors import DATA_FORMAT_INVALID
from regions.otsserver.plainlayout import (  # noqa: F401  (the format's numbers, here by name)
    HEADER, TAG_ROW_PK, TAG_ROW_DATA, TAG_CELL, TAG_CELL_NAME, TAG_CELL_VALUE, TAG_CELL_TYPE,
    TAG_CELL_TIMESTAMP, TAG_DELETE_ROW_MARKER, TAG_ROW_CHECKSUM, TAG_CELL_CHECKSUM,
    TAG_EXTENSION, TAG_SEQ_INFO, TAG_SEQ_INFO_EPOCH, TAG_SEQ_INFO_TS, TAG_SEQ_INFO_ROW_INDEX,
    VT_INTEGER, VT_DOUBLE, VT_BOOLEAN, VT_STRING, VT_NULL, VT_BLOB, VT_INF_MIN, VT_INF_MAX,
    VT_AUTO_INCREMENT, DELETE_ALL_VERSION, DELETE_ONE_VERSION, INCREMENT)

CELL_OPS = frozenset((DELETE_ALL_VERSION, DELETE_ONE_VERSION, INCREMENT))

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


def _crc8_table(poly: int = 0x07) -> tuple:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = ((crc << 1) ^ poly) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
        table.append(crc)
    return tuple(table)


CRC8_TABLE = _crc8_table()


def crc8(crc: int, data) -> int:
    """Fold ``data`` (bytes-like) into the running CRC-8 ``crc``."""
    table = CRC8_TABLE
    for byte in data:
        crc = table[crc ^ byte]
    return crc


#: ``crc8`` of a long buffer (a SimpleRowMatrix block, regions/otsserver/rowmatrix.py):
#: the C twin (``_plainbuffer.crc8``, the same values: tests/test_otsserver_rowmatrix.py),
#: or this module's ``crc8`` under LSM_REGIONS_PUREPYTHON.
crc8_buffer = crc8 if PUREPYTHON else _plainbuffer.crc8


class PlainBufferError(ValueError):
    """The bytes are not a well-formed PlainBuffer (or a value cannot be encoded).

    The message uses Tablestore's wording where it has one; the HTTP layer
    turns it into ``400 OTSParameterInvalid``.
    """


class NotUtf8(PlainBufferError):
    """A cell name or a VT_STRING value whose bytes are not UTF-8.

    ``column`` is the cell's name (decoded with replacement characters) and
    ``part`` is "name" or "value", so that the caller can word the service's
    error (regions.tablestore.errors: ``invalid_column_name`` / ``not_utf8``).
    """

    def __init__(self, column: str, part: str):
        super().__init__("the %s of cell %r is not UTF-8" % (part, column))
        self.column = column
        self.part = part


class Markers(NamedTuple):
    """The objects that stand for the three data-less variants."""
    inf_min: object
    inf_max: object
    auto_increment: object


class Cell(NamedTuple):
    """One attribute cell as written in a request or response.

    ``value`` is None when the cell carries no value (deletes); ``op`` is one
    of DELETE_ALL_VERSION, DELETE_ONE_VERSION, INCREMENT, or None for a put.
    """
    name: str
    value: object = None
    timestamp: int | None = None
    op: int | None = None


class PlainRow(NamedTuple):
    """A decoded row: ``primary_key`` is a list of (name, value)."""
    primary_key: list
    cells: list
    delete_marker: bool = False


_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")


class PlainBufferCodec:
    """Encode and decode PlainBuffer rows, checking both checksum levels."""

    def __init__(self, markers: Markers, compiled: bool = None):
        self.markers = markers
        # None: the C encoder unless LSM_REGIONS_PUREPYTHON (module docstring)
        self.compiled = (not PUREPYTHON) if compiled is None else bool(compiled)
        self._marker_vt = {id(markers.inf_min): VT_INF_MIN,
                           id(markers.inf_max): VT_INF_MAX,
                           id(markers.auto_increment): VT_AUTO_INCREMENT}
        self._vt_marker = {VT_INF_MIN: markers.inf_min,
                           VT_INF_MAX: markers.inf_max,
                           VT_AUTO_INCREMENT: markers.auto_increment}

    # ----------------------------------------------------------------- encode
    def encode_variant(self, value) -> bytes:
        """The bare variant of ``value``: type byte + data, no tag, no length."""
        vt = self._marker_vt.get(id(value))
        if vt is not None:
            return bytes((vt,))
        if value is True or value is False:
            return bytes((VT_BOOLEAN, 1 if value else 0))
        if isinstance(value, int):
            if not INT64_MIN <= value <= INT64_MAX:
                raise PlainBufferError("integer out of int64 range: %d" % value)
            return b"\x00" + _I64.pack(value)
        if isinstance(value, float):
            return b"\x01" + _F64.pack(value)
        if isinstance(value, str):
            data = value.encode("utf-8")
            return b"\x03" + _I32.pack(len(data)) + data
        if isinstance(value, bytes):
            return b"\x03" + _I32.pack(len(value)) + value
        if isinstance(value, bytearray):
            return b"\x07" + _I32.pack(len(value)) + bytes(value)
        raise PlainBufferError("cannot encode a value of type %s" % type(value).__name__)

    def _write_cell(self, out: bytearray, name: str, value, timestamp, op) -> int:
        """Append one cell to ``out`` and return its checksum."""
        name_b = name.encode("utf-8")
        out.append(TAG_CELL)
        out.append(TAG_CELL_NAME)
        out += _I32.pack(len(name_b))
        out += name_b
        crc = crc8(0, name_b)
        if value is not None:
            variant = self.encode_variant(value)
            out.append(TAG_CELL_VALUE)
            out += _I32.pack(len(variant))
            out += variant
            crc = crc8(crc, variant)
        if op is not None:
            if op not in CELL_OPS:
                raise PlainBufferError("unknown cell type: %r" % (op,))
            out.append(TAG_CELL_TYPE)
            out.append(op)
        if timestamp is not None:
            ts = _I64.pack(timestamp)
            out.append(TAG_CELL_TIMESTAMP)
            out += ts
            crc = crc8(crc, ts)
        if op is not None:
            crc = CRC8_TABLE[crc ^ op]
        out.append(TAG_CELL_CHECKSUM)
        out.append(crc)
        return crc

    def _write_row(self, out: bytearray, primary_key: Sequence, cells: Sequence,
                   delete_marker: bool, extension: bytes = b"") -> None:
        table = CRC8_TABLE
        row_crc = 0
        if primary_key is not None:
            out.append(TAG_ROW_PK)
        for name, value in primary_key or ():
            if value is None:
                raise PlainBufferError("primary key column %r has no value" % (name,))
            row_crc = table[row_crc ^ self._write_cell(out, name, value, None, None)]
        if cells:
            out.append(TAG_ROW_DATA)
            for cell in cells:
                n = len(cell)
                row_crc = table[row_crc ^ self._write_cell(
                    out, cell[0], cell[1] if n > 1 else None,
                    cell[2] if n > 2 else None, cell[3] if n > 3 else None)]
        if delete_marker:
            out.append(TAG_DELETE_ROW_MARKER)
        row_crc = table[row_crc ^ (1 if delete_marker else 0)]
        out += extension                # not covered by the row checksum
        out.append(TAG_ROW_CHECKSUM)
        out.append(row_crc)

    def encode_row(self, primary_key: Sequence, cells: Sequence = (),
                   delete_marker: bool = False) -> bytes:
        """One row with its header.

        ``primary_key``: (name, value) pairs, or None for a row without
        TAG_ROW_PK: what the service returns for an UpdateRow's
        RT_AFTER_MODIFY (its columns alone; the Java, Go and Node SDKs read
        the tag as optional).  ``cells``: tuples ``(name, value[, timestamp[,
        op]])`` (a ``Cell`` fits); value None writes no value.
        """
        if self.compiled and primary_key is not None:
            try:
                return _plainbuffer.encode_rows(((primary_key, cells, delete_marker),),
                                                self._marker_vt, True)
            except _plainbuffer.Unsupported:
                pass  # the Python encoder below judges (and words the error)
        out = bytearray(_I32.pack(HEADER))
        self._write_row(out, primary_key, cells, delete_marker)
        return bytes(out)

    def encode_record(self, primary_key: Sequence, cells: Sequence, epoch: int,
                      timestamp: int, row_index: int) -> bytes:
        """A stream record: one row with its header, ``cells`` as in
        ``encode_row`` (a deletion's cell carries its op), and the row
        extension with the record's sequence info (epoch, timestamp, row
        index) before the row checksum, which does not cover it.  The two
        lengths are the bytes that follow each (the C# SDK's encoder's
        values; the Go and Java readers skip them)."""
        seq = (bytes((TAG_SEQ_INFO_EPOCH,)) + _I32.pack(epoch) + bytes((TAG_SEQ_INFO_TS,))
               + _I64.pack(timestamp) + bytes((TAG_SEQ_INFO_ROW_INDEX,)) + _I32.pack(row_index))
        info = bytes((TAG_SEQ_INFO,)) + _I32.pack(len(seq) - 1) + seq
        extension = bytes((TAG_EXTENSION,)) + _I32.pack(len(info) - 1) + info
        out = bytearray(_I32.pack(HEADER))
        self._write_row(out, primary_key, cells, False, extension)
        return bytes(out)

    def encode_rows(self, rows: Sequence) -> bytes:
        """Rows ``(primary_key, cells)`` under one header; ``b""`` for none.

        This is GetRange's ``rows`` field: the SDK reads an empty field as no
        rows and a non-empty one as a header followed by rows.
        """
        if not rows:
            return b""
        if self.compiled:
            try:
                return _plainbuffer.encode_rows(rows, self._marker_vt, False)
            except _plainbuffer.Unsupported:
                pass
        out = bytearray(_I32.pack(HEADER))
        for primary_key, cells in rows:
            self._write_row(out, primary_key, cells or (), False)
        return bytes(out)

    # ----------------------------------------------------------------- decode
    def decode_variant(self, data, pos: int = 0, end: int | None = None):
        """Decode a bare variant in ``data[pos:end]``; return (value, new_pos)."""
        if end is None:
            end = len(data)
        if pos >= end:
            raise PlainBufferError(DATA_FORMAT_INVALID)
        vt = data[pos]
        pos += 1
        if vt == VT_INTEGER:
            if pos + 8 > end:
                raise PlainBufferError(DATA_FORMAT_INVALID)
            return _I64.unpack_from(data, pos)[0], pos + 8
        if vt == VT_STRING or vt == VT_BLOB:
            if pos + 4 > end:
                raise PlainBufferError(DATA_FORMAT_INVALID)
            n = _I32.unpack_from(data, pos)[0]
            pos += 4
            if n < 0 or pos + n > end:
                raise PlainBufferError(DATA_FORMAT_INVALID)
            raw = bytes(data[pos:pos + n])
            if vt == VT_BLOB:
                return bytearray(raw), pos + n
            try:
                return raw.decode("utf-8"), pos + n
            except UnicodeDecodeError:
                raise NotUtf8("", "value") from None
        if vt == VT_BOOLEAN:
            if pos + 1 > end:
                raise PlainBufferError(DATA_FORMAT_INVALID)
            return data[pos] != 0, pos + 1
        if vt == VT_DOUBLE:
            if pos + 8 > end:
                raise PlainBufferError(DATA_FORMAT_INVALID)
            return _F64.unpack_from(data, pos)[0], pos + 8
        marker = self._vt_marker.get(vt)
        if marker is not None:
            return marker, pos
        raise PlainBufferError("Unsupported variant type: %d." % vt)

    def decode_bare_variant(self, data) -> object:
        """A whole buffer that must be exactly one bare variant."""
        value, pos = self.decode_variant(data, 0, len(data))
        if pos != len(data):
            raise PlainBufferError(DATA_FORMAT_INVALID)
        return value

    def decode_row(self, data) -> PlainRow:
        """Exactly one row, with its header (a request's row field)."""
        rows = self.decode_rows(data)
        if len(rows) != 1:
            raise PlainBufferError(DATA_FORMAT_INVALID)
        return rows[0]

    def decode_rows(self, data) -> list:
        """All rows under one header; ``b""`` decodes to no rows."""
        if not data:
            return []
        data = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
        if len(data) < 4:
            raise PlainBufferError(DATA_FORMAT_INVALID)
        header = _I32.unpack_from(data, 0)[0]
        if header != HEADER:
            raise PlainBufferError("Cell data broken, mismatch header, actual: %d, expect: %d."
                                   % (header, HEADER))
        reader = _Reader(self, data, 4)
        rows = []
        while reader.pos < reader.end:
            rows.append(reader.read_row())
        return rows


class _Reader:
    """A cursor over one buffer; used by one call only."""

    __slots__ = ("codec", "data", "pos", "end")

    def __init__(self, codec: PlainBufferCodec, data, pos: int):
        self.codec = codec
        self.data = data
        self.pos = pos
        self.end = len(data)

    def _byte(self) -> int:
        if self.pos >= self.end:
            raise PlainBufferError(DATA_FORMAT_INVALID)
        b = self.data[self.pos]
        self.pos += 1
        return b

    def _peek(self) -> int:
        return self.data[self.pos] if self.pos < self.end else -1

    def _take(self, n: int):
        if n < 0 or self.pos + n > self.end:
            raise PlainBufferError(DATA_FORMAT_INVALID)
        start = self.pos
        self.pos += n
        return self.data[start:self.pos]

    def _int32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def read_row(self) -> PlainRow:
        table = CRC8_TABLE
        if self._byte() != TAG_ROW_PK:
            raise PlainBufferError(DATA_FORMAT_INVALID)
        row_crc = 0
        primary_key = []
        while self._peek() == TAG_CELL:
            name, value, ts, op, crc = self._read_cell()
            if value is None or ts is not None or op is not None:
                raise PlainBufferError(DATA_FORMAT_INVALID)
            primary_key.append((name, value))
            row_crc = table[row_crc ^ crc]
        cells = []
        if self._peek() == TAG_ROW_DATA:
            self.pos += 1
            while self._peek() == TAG_CELL:
                name, value, ts, op, crc = self._read_cell()
                cells.append(Cell(name, value, ts, op))
                row_crc = table[row_crc ^ crc]
        delete_marker = False
        if self._peek() == TAG_DELETE_ROW_MARKER:
            self.pos += 1
            delete_marker = True
        row_crc = table[row_crc ^ (1 if delete_marker else 0)]
        if self._peek() != TAG_ROW_CHECKSUM:
            raise PlainBufferError("Invalid row: missing checksum.")
        self.pos += 1
        actual = self._byte()
        if actual != row_crc:
            raise PlainBufferError("Cell data broken, checksum is mismatch, %d:%d"
                                   % (actual, row_crc))
        return PlainRow(primary_key, cells, delete_marker)

    def _read_cell(self):
        self.pos += 1  # TAG_CELL, peeked by the caller
        if self._byte() != TAG_CELL_NAME:
            raise PlainBufferError(DATA_FORMAT_INVALID)
        name_b = bytes(self._take(self._int32()))
        try:
            name = name_b.decode("utf-8")
        except UnicodeDecodeError:
            raise NotUtf8(name_b.decode("utf-8", "replace"), "name") from None
        crc = crc8(0, name_b)
        value = ts = op = None
        tag = self._peek()
        if tag == TAG_CELL_VALUE:
            self.pos += 1
            n = self._int32()
            start = self.pos
            variant = self._take(n)
            try:
                value, after = self.codec.decode_variant(self.data, start, start + n)
            except NotUtf8:
                raise NotUtf8(name, "value") from None
            if after != start + n:
                raise PlainBufferError(DATA_FORMAT_INVALID)
            crc = crc8(crc, variant)
            tag = self._peek()
        if tag == TAG_CELL_TYPE:
            self.pos += 1
            op = self._byte()
            if op not in CELL_OPS:
                raise PlainBufferError("Unsupported cell type: %d." % op)
            tag = self._peek()
        if tag == TAG_CELL_TIMESTAMP:
            self.pos += 1
            raw = self._take(8)
            ts = _I64.unpack(raw)[0]
            crc = crc8(crc, raw)
            tag = self._peek()
        if op is not None:
            crc = CRC8_TABLE[crc ^ op]
        if tag != TAG_CELL_CHECKSUM:
            raise PlainBufferError(DATA_FORMAT_INVALID)
        self.pos += 1
        actual = self._byte()
        if actual != crc:
            raise PlainBufferError("Cell data broken, checksum is mismatch, %d:%d" % (actual, crc))
        return name, value, ts, op, crc
