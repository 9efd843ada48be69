# cython: language_level=3
"""C twin of the PlainBuffer row encoder (regions.otsserver.plainbuffer).

Why: encoding response rows was the largest Python cost of GetRange in the
server (py-spy, docs/otsserver.md "Measured"): a per-cell Python call and a
per-byte Python CRC-8 loop.  The format is owned and documented by
``regions/otsserver/plainbuffer.py``; this module defines nothing, it writes
the same bytes as ``PlainBufferCodec.encode_row`` / ``encode_rows`` (tests
compare both on the same inputs, tests/test_otsserver_plainbuffer.py).

Also ``crc8(crc, data)``, the CRC-8 of plainbuffer.py over a whole buffer.

Contract: ``encode_rows(rows, marker_vt, with_delete)`` returns the encoded
buffer, or raises ``Unsupported`` for anything it does not handle itself
(a value of another type, an integer outside int64, an unknown op, a
primary-key cell without value, a non-str name).  The caller then runs the
pure-Python encoder, which gives the error with its wording.  Pure function,
thread-safe (the GIL is held throughout).
"""
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from regions._api cimport Buf, buf_put as _bytes, buf_reserve as _reserve
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t*) except NULL


class Unsupported(Exception):
    """Raised for input the pure-Python encoder must handle (and judge)."""


# The wire numbers it writes, read at import from the one statement of them
# (regions/otsserver/plainlayout.py, which plainbuffer.py reads too).
from regions.otsserver import plainlayout as _wire

cdef uint8_t HEADER = _wire.HEADER
cdef uint8_t TAG_ROW_PK = _wire.TAG_ROW_PK
cdef uint8_t TAG_ROW_DATA = _wire.TAG_ROW_DATA
cdef uint8_t TAG_CELL = _wire.TAG_CELL
cdef uint8_t TAG_CELL_NAME = _wire.TAG_CELL_NAME
cdef uint8_t TAG_CELL_VALUE = _wire.TAG_CELL_VALUE
cdef uint8_t TAG_CELL_TYPE = _wire.TAG_CELL_TYPE
cdef uint8_t TAG_CELL_TIMESTAMP = _wire.TAG_CELL_TIMESTAMP
cdef uint8_t TAG_DELETE_ROW_MARKER = _wire.TAG_DELETE_ROW_MARKER
cdef uint8_t TAG_ROW_CHECKSUM = _wire.TAG_ROW_CHECKSUM
cdef uint8_t TAG_CELL_CHECKSUM = _wire.TAG_CELL_CHECKSUM
cdef uint8_t VT_INTEGER = _wire.VT_INTEGER
cdef uint8_t VT_DOUBLE = _wire.VT_DOUBLE
cdef uint8_t VT_BOOLEAN = _wire.VT_BOOLEAN
cdef uint8_t VT_STRING = _wire.VT_STRING
cdef uint8_t VT_BLOB = _wire.VT_BLOB
cdef int DELETE_ALL_VERSION = _wire.DELETE_ALL_VERSION
cdef int DELETE_ONE_VERSION = _wire.DELETE_ONE_VERSION
cdef int INCREMENT = _wire.INCREMENT

cdef uint8_t CRC8[256]


cdef void _init_crc8():
    cdef int byte, bit
    cdef unsigned int crc
    for byte in range(256):
        crc = byte
        for bit in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
        CRC8[byte] = <uint8_t>crc


_init_crc8()


cdef inline uint8_t _crc(uint8_t crc, const unsigned char* data, Py_ssize_t n):
    cdef Py_ssize_t i
    for i in range(n):
        crc = CRC8[crc ^ data[i]]
    return crc


def crc8(unsigned int crc, data):
    """``plainbuffer.crc8`` in C: ``data`` (bytes or bytearray) folded into the
    running CRC-8 ``crc`` (0..255).  The SimpleRowMatrix block's checksum
    covers the whole block (regions/otsserver/rowmatrix.py), megabytes that a
    Python loop would step through a byte at a time.  plainbuffer.crc8_buffer
    is the fork between the two."""
    if crc > 0xFF:
        raise ValueError(f"crc must be in 0..255, got {crc}")
    if type(data) is bytes:
        return _crc(<uint8_t>crc, <const unsigned char*>PyBytes_AS_STRING(data),
                    PyBytes_GET_SIZE(data))
    if type(data) is bytearray:
        return _crc(<uint8_t>crc, <const unsigned char*>PyByteArray_AS_STRING(data),
                    PyByteArray_GET_SIZE(data))
    raise TypeError(f"data must be bytes or bytearray, got {type(data).__name__}")


cdef inline void _le(unsigned char* at, unsigned long long v, int width):
    cdef int i
    for i in range(width):
        at[i] = <unsigned char>(v >> (8 * i))


cdef int _sized(Buf* b, uint8_t vt, const char* data, Py_ssize_t n) except -1:
    """TAG_CELL_VALUE, len, then the variant vt + int32 len + data."""
    if n > 0x7FFFFFF0:
        raise Unsupported()
    _reserve(b, 10 + n)
    b.p[b.n] = TAG_CELL_VALUE
    _le(b.p + b.n + 1, <unsigned long long>(n + 5), 4)
    b.p[b.n + 5] = vt
    _le(b.p + b.n + 6, <unsigned long long>n, 4)
    memcpy(b.p + b.n + 10, data, n)
    b.n += 10 + n
    return 0


cdef int _fixed(Buf* b, uint8_t vt, unsigned long long v, int width) except -1:
    """TAG_CELL_VALUE, len, then the variant vt + ``width`` little-endian bytes."""
    _reserve(b, 6 + width)
    b.p[b.n] = TAG_CELL_VALUE
    _le(b.p + b.n + 1, <unsigned long long>(1 + width), 4)
    b.p[b.n + 5] = vt
    _le(b.p + b.n + 6, v, width)
    b.n += 6 + width
    return 0


cdef int _cell(Buf* b, object name, object value, object timestamp, object op,
               dict marker_vt) except -1:
    """Append one cell; return its checksum."""
    cdef Py_ssize_t n, start
    cdef const char* s
    cdef int64_t i
    cdef double d
    cdef unsigned long long bits
    cdef int opv = -1
    cdef uint8_t crc
    cdef object vt
    if type(name) is not str:
        raise Unsupported()
    s = PyUnicode_AsUTF8AndSize(name, &n)
    if n > 0x7FFFFFF0:
        raise Unsupported()
    _reserve(b, 6)
    b.p[b.n] = TAG_CELL
    b.p[b.n + 1] = TAG_CELL_NAME
    _le(b.p + b.n + 2, <unsigned long long>n, 4)
    b.n += 6
    _bytes(b, s, n)
    crc = _crc(0, <const unsigned char*>s, n)
    if value is not None:
        start = b.n + 5                      # the variant starts after tag + int32
        vt = marker_vt.get(id(value))
        if vt is not None:
            _reserve(b, 6)
            b.p[b.n] = TAG_CELL_VALUE
            _le(b.p + b.n + 1, 1, 4)
            b.p[b.n + 5] = <uint8_t>(<int>vt)
            b.n += 6
        elif value is True or value is False:
            _fixed(b, VT_BOOLEAN, 1 if value is True else 0, 1)
        elif type(value) is int:
            try:
                i = value
            except OverflowError:
                raise Unsupported() from None
            _fixed(b, VT_INTEGER, <unsigned long long>i, 8)
        elif type(value) is float:
            d = value
            memcpy(&bits, &d, 8)
            _fixed(b, VT_DOUBLE, bits, 8)
        elif type(value) is str:
            s = PyUnicode_AsUTF8AndSize(value, &n)
            _sized(b, VT_STRING, s, n)
        elif type(value) is bytes:
            _sized(b, VT_STRING, PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value))
        elif type(value) is bytearray:
            _sized(b, VT_BLOB, PyByteArray_AS_STRING(value), PyByteArray_GET_SIZE(value))
        else:
            raise Unsupported()
        crc = _crc(crc, b.p + start, b.n - start)
    if op is not None:
        if type(op) is not int or op not in (DELETE_ALL_VERSION, DELETE_ONE_VERSION, INCREMENT):
            raise Unsupported()
        opv = op
        _reserve(b, 2)
        b.p[b.n] = TAG_CELL_TYPE
        b.p[b.n + 1] = <uint8_t>opv
        b.n += 2
    if timestamp is not None:
        if type(timestamp) is not int:
            raise Unsupported()
        try:
            i = timestamp
        except OverflowError:
            raise Unsupported() from None
        _reserve(b, 9)
        b.p[b.n] = TAG_CELL_TIMESTAMP
        _le(b.p + b.n + 1, <unsigned long long>i, 8)
        crc = _crc(crc, b.p + b.n + 1, 8)
        b.n += 9
    if opv >= 0:
        crc = CRC8[crc ^ opv]
    _reserve(b, 2)
    b.p[b.n] = TAG_CELL_CHECKSUM
    b.p[b.n + 1] = crc
    b.n += 2
    return crc


cdef int _row(Buf* b, object primary_key, object cells, bint delete_marker,
              dict marker_vt) except -1:
    cdef uint8_t row_crc = 0
    cdef Py_ssize_t k
    cdef object cell
    _reserve(b, 1)
    b.p[b.n] = TAG_ROW_PK
    b.n += 1
    for name, value in primary_key:
        if value is None:
            raise Unsupported()
        row_crc = CRC8[row_crc ^ _cell(b, name, value, None, None, marker_vt)]
    if cells:
        _reserve(b, 1)
        b.p[b.n] = TAG_ROW_DATA
        b.n += 1
        for cell in cells:
            k = len(cell)
            if k < 1 or k > 4:
                raise Unsupported()
            row_crc = CRC8[row_crc ^ _cell(
                b, cell[0], cell[1] if k > 1 else None, cell[2] if k > 2 else None,
                cell[3] if k > 3 else None, marker_vt)]
    _reserve(b, 3)
    if delete_marker:
        b.p[b.n] = TAG_DELETE_ROW_MARKER
        b.n += 1
    b.p[b.n] = TAG_ROW_CHECKSUM
    b.p[b.n + 1] = CRC8[row_crc ^ (1 if delete_marker else 0)]
    b.n += 2
    return 0


def encode_rows(rows, dict marker_vt, bint with_delete):
    """Header + rows.  ``rows``: (primary_key, cells[, delete_marker]) items
    (``with_delete`` says whether the third field is there)."""
    cdef Buf b
    b.n = 0
    b.cap = 256
    b.p = <unsigned char*>malloc(b.cap)
    if b.p == NULL:
        raise MemoryError()
    try:
        _le(b.p, HEADER, 4)
        b.n = 4
        for item in rows:
            if with_delete:
                _row(&b, item[0], item[1], item[2], marker_vt)
            else:
                _row(&b, item[0], item[1], False, marker_vt)
        return PyBytes_FromStringAndSize(<const char*>b.p, b.n)
    finally:
        free(b.p)
