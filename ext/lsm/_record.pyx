# cython: language_level=3
"""The log writer (``lsm.wal.LogWriter``) and the WAL record of a write,
built in C.

``LogWriter`` appends logical records in the log format that lsm/wal.py
documents (the constants are declared once, in _record.pxd, and lsm.wal
re-exports them; ``lsm.wal.LogReader`` reads what it writes).  A record is
framed in one buffer, every fragment and block trailer of it, and handed to
the file in one call: to an ``lsm._fileio.OSAppendFile`` as a C ``write``
(no Python object made), to any other ``AppendFile`` as one ``append`` of
bytes.  The CRC is zlib's crc32 (``crc32`` below) over length+type+payload, masked as LevelDB
does (_coding.pxd).

The write path (lsm._write) hands it a put, a delete or a batch whole:
``add_single(seq, kind, key, value)`` writes the record that
``add_record(lsm.batch.encode_single(seq, kind, key, value))`` would, and
``add_batch(seq, ops)`` that of ``add_record(lsm.batch.encode_record(seq,
ops))``, building the payload in place (tests check them byte for byte).
``encode_batch`` is ``lsm.batch.encode_record`` in one C buffer.  The batch
record's format is lsm/batch.py's:

    payload := sequence:fixed64le  count:fixed32le
               (kind:uint8  key_len:fixed32le  key  [value_len:fixed32le  value])*
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy, memset
cimport cython

from lsm._coding cimport encode_fixed32 as _put32, encode_fixed64 as _put64, mask_crc
from lsm._fileio cimport OSAppendFile
from lsm._keys cimport KIND_DELETE, KIND_VALUE

from lsm.arguments import check_key, check_value
from lsm.errors import ClosedError, ReadOnlyError

cdef extern from "crc32_fold.h":
    uint32_t lsm_crc32(uint32_t crc, const unsigned char *p, size_t n) nogil
    uint32_t lsm_crc32_with(uint32_t crc, const unsigned char *p, size_t n, int force) nogil
    unsigned long long LSM_K544, LSM_K480, LSM_K160, LSM_K96
    int LSM_CRC_FOLD_MIN


def crc32(data, uint32_t value=0):
    """zlib's ``crc32(data, value)`` of any buffer, folded with PCLMULQDQ
    when the buffer is long and the CPU has it (ext/lsm/crc32_fold.h): the
    CRC of every table block and log record (lsm/crc.py)."""
    cdef Py_buffer view
    cdef uint32_t c
    if type(data) is bytes:
        return lsm_crc32(value, <const unsigned char*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            c = lsm_crc32(value, <const unsigned char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return c


def _crc32_with(data, uint32_t value, int force):
    """``crc32`` with the method forced (1: folded when >= 64 bytes and the
    CPU can, 0: zlib), and the fold's constants: for tests."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return lsm_crc32_with(value, <const unsigned char*>view.buf, view.len, force)
    finally:
        PyBuffer_Release(&view)


#: The fold's constants (x^544, x^480, x^160, x^96 mod P, reflected) and
#: the length from which ``crc32`` folds: for tests.
FOLD_CONSTANTS = (LSM_K544, LSM_K480, LSM_K160, LSM_K96)
FOLD_MIN = LSM_CRC_FOLD_MIN

# The log format's constants, for Python (lsm.wal re-exports them).
BLOCK_SIZE = LOG_BLOCK_SIZE
HEADER_SIZE = LOG_HEADER_SIZE
FULL = LOG_FULL
FIRST = LOG_FIRST
MIDDLE = LOG_MIDDLE
LAST = LOG_LAST


cdef inline void _header(unsigned char* p, Py_ssize_t n, unsigned char typ):
    """Fill the header at ``p`` of the physical record whose ``n`` payload
    bytes follow it."""
    p[4] = n & 0xff
    p[5] = (n >> 8) & 0xff
    p[6] = typ
    cdef uint32_t c = lsm_crc32(0, p + 4, 3)
    c = lsm_crc32(c, p + LOG_HEADER_SIZE, <size_t>n)
    _put32(p, mask_crc(c))


cdef inline Py_ssize_t _single_size(int kind, bytes key, bytes value):
    """Payload bytes of the one-entry batch record of a put or delete."""
    return 17 + PyBytes_GET_SIZE(key) + ((4 + PyBytes_GET_SIZE(value)) if kind == KIND_VALUE else 0)


cdef void _put_single(unsigned char* q, uint64_t seq, int kind, bytes key, bytes value):
    """Write the one-entry batch record of a put or delete at ``q``."""
    cdef Py_ssize_t kn = PyBytes_GET_SIZE(key), vn
    _put64(q, seq)
    _put32(q + 8, 1)
    q[12] = <unsigned char>kind
    _put32(q + 13, <uint32_t>kn)
    memcpy(q + 17, PyBytes_AS_STRING(key), kn)
    if kind == KIND_VALUE:
        vn = PyBytes_GET_SIZE(value)
        _put32(q + 17 + kn, <uint32_t>vn)
        memcpy(q + 21 + kn, PyBytes_AS_STRING(value), vn)


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


def ops_bytes(list ops not None):
    """The key and value bytes of ``ops``, ``(kind, key, value)`` tuples that
    ``WriteBatch.of_ops`` takes, checked as ``put`` and ``delete`` check
    theirs: raises TypeError or ValueError naming the first bad one."""
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
    >>> b.ops[0][0] == WriteBatch.PUT
    True
    """

    #: The kinds of ``ops`` (lsm/dbformat.py's, never renumbered): what a
    #: caller of ``of_ops`` or a reader of ``ops`` needs of the record kinds.
    PUT = KIND_VALUE
    DELETE = KIND_DELETE

    #: Limits checked when the batch is written (the DB's Options apply);
    #: here only types and emptiness, so a batch can be built without a DB.
    def __init__(self):
        self._ops = []
        self._bytes = 0

    def put(self, key, value):
        if type(key) is not bytes or PyBytes_GET_SIZE(key) == 0 or type(value) is not bytes:
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


# -- the log writer ------------------------------------------------------------
@cython.final
cdef class LogWriter:
    """Appends logical records to an ``AppendFile`` (see the module doc).

    Each record, every fragment of it, goes to the file in one call: once
    ``add_record`` returns the record is with the OS.  After a failed append
    the writer refuses further records (``ReadOnlyError``): the file's tail
    is unknown, and a record written after torn bytes would turn a droppable
    tail into mid-log damage.

    Not thread-safe: the owner serializes calls (the DB's write path does).
    The writer owns ``f``: ``close()`` closes it.
    """

    def __cinit__(self, *args, **kwargs):
        self._buf = NULL
        self._cap = 0

    def __dealloc__(self):
        free(self._buf)

    def __init__(self, f, offset=0):
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"LogWriter offset must be an int >= 0, got {offset!r}")
        self._f = f
        self._os = f if type(f) is OSAppendFile else None
        self.room = LOG_BLOCK_SIZE - offset % LOG_BLOCK_SIZE
        self._error = None

    @property
    def size(self):
        """Bytes in the file (what a later ``LogWriter`` would take as ``offset``)."""
        return self._os.size if self._os is not None else self._f.size

    cdef unsigned char* _scratch(self, Py_ssize_t n) except NULL:
        """The writer's buffer, at least ``n`` bytes."""
        cdef void* p
        if n > self._cap:
            p = realloc(self._buf, n)
            if p == NULL:
                raise MemoryError()
            self._buf = <unsigned char*>p
            self._cap = n
        return self._buf

    cdef int _emit(self, const unsigned char* p, Py_ssize_t n, Py_ssize_t room) except -1:
        """Append ``n`` framed bytes; on success ``room`` is the block's rest.
        A failure is kept: later records are refused."""
        try:
            if self._os is not None:
                self._os.write(<const char*>p, n)
            else:
                self._f.append(PyBytes_FromStringAndSize(<const char*>p, n))
        except BaseException as e:
            self._error = e
            raise
        self.room = room
        return 0

    cdef int _refuse(self) except -1:
        if isinstance(self._error, ClosedError):
            raise ClosedError("add_record on a closed LogWriter")
        raise ReadOnlyError(f"log writer refuses records after a failed append: {self._error!r}")

    def add_record(self, payload):
        """Append one logical record (bytes-like)."""
        cdef Py_buffer buf
        if self._error is not None:
            self._refuse()
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise TypeError(f"log record payload must be bytes, got {type(payload).__name__}")
        PyObject_GetBuffer(payload, &buf, PyBUF_SIMPLE)
        try:
            self._add(<const unsigned char*>buf.buf, buf.len)
        finally:
            PyBuffer_Release(&buf)

    cdef int _add(self, const unsigned char* payload, Py_ssize_t n) except -1:
        """Frame ``n`` payload bytes (not in the scratch buffer) as FULL, or
        as FIRST, MIDDLE*, LAST fragments one per block, and append them."""
        cdef Py_ssize_t bo = LOG_BLOCK_SIZE - self.room, left, frag, pos = 0, out = 0
        cdef unsigned char* p
        cdef unsigned char typ
        cdef bint begin = True, end
        p = self._scratch(n + (n // (LOG_BLOCK_SIZE - LOG_HEADER_SIZE) + 3) * LOG_HEADER_SIZE)
        while True:
            left = LOG_BLOCK_SIZE - bo
            if left < LOG_HEADER_SIZE:                  # zero trailer, next block
                memset(p + out, 0, left)
                out += left
                bo = 0
                left = LOG_BLOCK_SIZE
            frag = n - pos if n - pos < left - LOG_HEADER_SIZE else left - LOG_HEADER_SIZE
            end = pos + frag == n
            if begin:
                typ = LOG_FULL if end else LOG_FIRST
                begin = False
            else:
                typ = LOG_LAST if end else LOG_MIDDLE
            memcpy(p + out + LOG_HEADER_SIZE, payload + pos, frag)
            _header(p + out, frag, typ)
            out += LOG_HEADER_SIZE + frag
            bo += LOG_HEADER_SIZE + frag
            pos += frag
            if end:
                return self._emit(p, out, LOG_BLOCK_SIZE - bo)

    cpdef int add_single(self, uint64_t seq, int kind, bytes key, bytes value) except -1:
        """``add_record(lsm.batch.encode_single(seq, kind, key, value))``,
        the payload built in place (``key`` and ``value`` already checked)."""
        cdef Py_ssize_t n
        cdef unsigned char* p
        cdef bytes payload
        if self._error is not None:
            self._refuse()
        if key is None or value is None:
            raise TypeError("add_single needs bytes key and value")
        n = _single_size(kind, key, value)
        if n + LOG_HEADER_SIZE <= self.room:            # one FULL record
            p = self._scratch(n + LOG_HEADER_SIZE)
            _put_single(p + LOG_HEADER_SIZE, seq, kind, key, value)
            _header(p, n, LOG_FULL)
            return self._emit(p, n + LOG_HEADER_SIZE, self.room - n - LOG_HEADER_SIZE)
        payload = PyBytes_FromStringAndSize(NULL, n)
        _put_single(<unsigned char*>PyBytes_AS_STRING(payload), seq, kind, key, value)
        return self._add(<const unsigned char*>PyBytes_AS_STRING(payload), n)

    cpdef int add_batch(self, uint64_t seq, list ops) except -1:
        """``add_record(lsm.batch.encode_record(seq, ops))``, the payload
        built in place (``ops``: a ``WriteBatch``'s, checked)."""
        cdef Py_ssize_t n
        cdef unsigned char* p
        cdef bytes payload
        if self._error is not None:
            self._refuse()
        if ops is None:
            raise TypeError("add_batch needs a list of ops")
        n = _batch_size(ops)
        if n + LOG_HEADER_SIZE <= self.room:
            p = self._scratch(n + LOG_HEADER_SIZE)
            _put_batch(p + LOG_HEADER_SIZE, seq, ops)
            _header(p, n, LOG_FULL)
            return self._emit(p, n + LOG_HEADER_SIZE, self.room - n - LOG_HEADER_SIZE)
        payload = _encode_batch(seq, ops)
        return self._add(<const unsigned char*>PyBytes_AS_STRING(payload), n)

    def sync(self):
        if self._error is not None:
            self._refuse()
        self._f.sync()

    def close(self):
        """Close the file (idempotent); unsynced bytes stay with the OS."""
        if not isinstance(self._error, ClosedError):
            self._error = ClosedError("closed")
            self._f.close()
