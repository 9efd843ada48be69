# cython: language_level=3
"""The WAL record of a write, framed, built in one C buffer (for the write
path, lsm._write, through _record.pxd).

``frame_single`` returns the bytes that ``LogWriter.add_record(
encode_single(seq, kind, key, value))`` would append when the record fits in
the rest of the current log block as one FULL physical record:

    header  := masked_crc32:uint32le  length:uint16le  type:uint8 (FULL = 1)
    payload := sequence:fixed64le  count:fixed32le (= 1)
               kind:uint8  key_len:fixed32le  key  [value_len:fixed32le  value]

``encode_batch(seq, ops)`` is ``lsm.batch.encode_record`` (the payload of
any batch, unframed), in one buffer; ``frame_batch`` is to it what
``frame_single`` is to ``encode_single``.

Both are C twins of two formats owned elsewhere: the log framing of
lsm/wal.py (the CRC is zlib's crc32 over length+type+payload, masked as
LevelDB does) and the batch record of lsm/batch.py; tests check all three
agree byte for byte.  The framing constants are read from lsm/wal.py, the
integer encodings and the CRC mask come from _coding.pxd, the kinds from
_keys.pxd: nothing is redeclared here.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy

from lsm._coding cimport encode_fixed32 as _put32, encode_fixed64 as _put64, mask_crc
from lsm._keys cimport KIND_DELETE, KIND_VALUE

from lsm import wal

cdef extern from "zlib.h":
    unsigned long crc32(unsigned long crc, const unsigned char *buf, unsigned int len) nogil

cdef Py_ssize_t HEADER = wal.HEADER_SIZE
cdef unsigned char FULL = wal.FULL


def frame_single(uint64_t seq, int kind, bytes key not None, bytes value not None,
                 Py_ssize_t block_left):
    """The framed WAL bytes of a one-entry batch, or None if it does not fit
    in ``block_left`` bytes (the caller then takes the general path)."""
    return _frame_single(seq, kind, key, value, block_left)


cdef bytes _frame_single(uint64_t seq, int kind, bytes key, bytes value, Py_ssize_t block_left):
    cdef Py_ssize_t kn = PyBytes_GET_SIZE(key)
    cdef Py_ssize_t vn = PyBytes_GET_SIZE(value) if kind == KIND_VALUE else 0
    cdef Py_ssize_t n = 8 + 4 + 1 + 4 + kn + ((4 + vn) if kind == KIND_VALUE else 0)
    if n + HEADER > block_left or n > 0xffff:
        return None
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n + HEADER)
    cdef unsigned char* p = <unsigned char*>PyBytes_AS_STRING(out)
    cdef unsigned char* q = p + HEADER
    _put64(q, seq)
    _put32(q + 8, 1)
    q[12] = <unsigned char>kind
    _put32(q + 13, <uint32_t>kn)
    memcpy(q + 17, PyBytes_AS_STRING(key), kn)
    if kind == KIND_VALUE:
        _put32(q + 17 + kn, <uint32_t>vn)
        memcpy(q + 21 + kn, PyBytes_AS_STRING(value), vn)
    p[4] = n & 0xff
    p[5] = (n >> 8) & 0xff
    p[6] = FULL
    cdef uint32_t c = crc32(0, p + 4, 3)
    c = crc32(c, q, <unsigned int>n)
    _put32(p, mask_crc(c))
    return out


cdef Py_ssize_t _batch_size(list ops) except -1:
    """Payload bytes of the batch record of ``ops``."""
    cdef Py_ssize_t n = 12, i
    cdef tuple op
    for i in range(len(ops)):
        op = <tuple?>ops[i]
        n += 5 + PyBytes_GET_SIZE(<bytes?>op[1])
        if <int>op[0] == KIND_VALUE:
            n += 4 + PyBytes_GET_SIZE(<bytes?>op[2])
    return n


cdef void _put_batch(unsigned char* q, uint64_t seq, list ops):
    """Write the batch record of ``ops`` (sized by ``_batch_size``) at ``q``."""
    cdef Py_ssize_t i, kn, vn, count = len(ops)
    cdef tuple op
    cdef bytes key, value
    _put64(q, seq)
    _put32(q + 8, <uint32_t>count)
    q += 12
    for i in range(count):
        op = <tuple>ops[i]
        key = <bytes>op[1]
        kn = PyBytes_GET_SIZE(key)
        q[0] = <unsigned char><int>op[0]
        _put32(q + 1, <uint32_t>kn)
        memcpy(q + 5, PyBytes_AS_STRING(key), kn)
        q += 5 + kn
        if <int>op[0] == KIND_VALUE:
            value = <bytes>op[2]
            vn = PyBytes_GET_SIZE(value)
            _put32(q, <uint32_t>vn)
            memcpy(q + 4, PyBytes_AS_STRING(value), vn)
            q += 4 + vn


def encode_batch(uint64_t seq, list ops not None):
    """``lsm.batch.encode_record(seq, ops)``: ops are (kind, key, value) tuples
    of bytes (``WriteBatch`` checked them)."""
    return _encode_batch(seq, ops)


cdef bytes _encode_batch(uint64_t seq, list ops):
    cdef Py_ssize_t n = _batch_size(ops)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n)
    _put_batch(<unsigned char*>PyBytes_AS_STRING(out), seq, ops)
    return out


def frame_batch(uint64_t seq, list ops not None, Py_ssize_t block_left):
    """``frame_single`` for a batch: the framed WAL bytes of
    ``encode_batch(seq, ops)`` as one FULL record, or None if it does not fit
    in ``block_left`` bytes (the caller then takes the general path)."""
    return _frame_batch(seq, ops, block_left)


cdef bytes _frame_batch(uint64_t seq, list ops, Py_ssize_t block_left):
    cdef Py_ssize_t n = _batch_size(ops)
    if n + HEADER > block_left or n > 0xffff:
        return None
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n + HEADER)
    cdef unsigned char* p = <unsigned char*>PyBytes_AS_STRING(out)
    _put_batch(p + HEADER, seq, ops)
    p[4] = n & 0xff
    p[5] = (n >> 8) & 0xff
    p[6] = FULL
    cdef uint32_t c = crc32(0, p + 4, 3)
    c = crc32(c, p + HEADER, <unsigned int>n)
    _put32(p, mask_crc(c))
    return out


def ops_bytes(list ops not None):
    """The key and value bytes of ``ops``, ``(kind, key, value)`` tuples that
    ``WriteBatch.of_ops`` takes, checked as ``put`` and ``delete`` check
    theirs: raises TypeError or ValueError naming the first bad one."""
    from lsm.batch import check_key, check_value
    cdef Py_ssize_t total = 0, i
    cdef object op, kind, key, value
    for i in range(len(ops)):
        op = ops[i]
        if type(op) is not tuple or len(<tuple>op) != 3:
            raise TypeError(f"operation {i} must be a (kind, key, value) tuple, got {op!r}")
        kind, key, value = <tuple>op
        if type(key) is not bytes or PyBytes_GET_SIZE(key) == 0:
            check_key(key, 1 << 62)
        if type(value) is not bytes:
            check_value(value, 1 << 62)
        if type(kind) is not int or (kind != KIND_VALUE and kind != KIND_DELETE):
            raise ValueError(f"operation {i}: kind must be {KIND_VALUE} (put) or "
                             f"{KIND_DELETE} (delete), got {kind!r}")
        if kind == KIND_DELETE and PyBytes_GET_SIZE(value):
            raise ValueError(f"operation {i}: a delete carries no value, got {len(value)} bytes")
        total += PyBytes_GET_SIZE(key) + PyBytes_GET_SIZE(value)
    return total


# -- the batch ---------------------------------------------------------------
cdef class WriteBatch:
    """Puts and deletes applied atomically by ``DB.write``, in order.

    Arguments are checked when added, so a bad one raises at once and the
    batch stays as it was.  Not thread-safe; reusable after ``clear()``.
    (In C, so that the write path and the region server read its operations
    without a Python call; ``lsm.batch`` owns its record format.)

    >>> b = WriteBatch().put(b"k", b"v").delete(b"old")
    >>> len(b), b.ops[1]
    (2, (0, b'old', b''))
    """

    #: Limits checked when the batch is written (the DB's Options apply);
    #: here only types and emptiness, so a batch can be built without a DB.
    def __init__(self):
        self._ops = []
        self._bytes = 0

    def put(self, key, value):
        if type(key) is not bytes or PyBytes_GET_SIZE(key) == 0 or type(value) is not bytes:
            from lsm.batch import check_key, check_value
            check_key(key, 1 << 62)
            check_value(value, 1 << 62)
        self._ops.append((KIND_VALUE, key, value))
        self._bytes += PyBytes_GET_SIZE(key) + PyBytes_GET_SIZE(value)
        return self

    @classmethod
    def of_ops(cls, ops):
        """A batch of ``ops``, a list of ``(KIND_VALUE, key, value)`` and
        ``(KIND_DELETE, key, b"")`` tuples (lsm.dbformat's kinds), checked
        as ``put`` and ``delete`` check theirs in one C pass: how a caller
        with many rows builds a batch without a method call a row.  The
        batch takes ``ops`` over: the caller must not change it after."""
        cdef WriteBatch b
        if type(ops) is not list:
            raise TypeError(f"ops must be a list, got {type(ops).__name__}")
        b = cls.__new__(cls)
        b._bytes = ops_bytes(ops)
        b._ops = ops
        return b

    def delete(self, key):
        if type(key) is not bytes or PyBytes_GET_SIZE(key) == 0:
            from lsm.batch import check_key
            check_key(key, 1 << 62)
        self._ops.append((KIND_DELETE, key, b""))
        self._bytes += PyBytes_GET_SIZE(key)
        return self

    def clear(self):
        self._ops = []
        self._bytes = 0

    def __len__(self):
        return len(self._ops)

    @property
    def approximate_bytes(self):
        return self._bytes

    @property
    def ops(self):
        """The (kind, key, value) operations, in order (read-only use)."""
        return self._ops
