# cython: language_level=3
"""The log writer (``lsm.wal.LogWriter``; LevelDB's log_writer.cc), in C.

``LogWriter`` appends logical records in the log format that lsm/wal.py
documents, and whose reader (``lsm.wal.LogReader``, Python) it pairs with;
the constants are declared once, in _log_writer.pxd, and lsm.wal re-exports
them.  A record is framed in one buffer, every fragment and block trailer of
it, and handed to the file in one call: to an ``lsm._fileio.OSAppendFile``
as a C ``write`` (no Python object made), to any other ``AppendFile`` as one
``append`` of bytes.  The CRC is zlib's crc32 (_crc32.pxd) over
length+type+payload, masked as LevelDB does (_coding.pxd).

The write path (lsm._write) hands it a put, a delete or a batch whole:
``add_single(seq, kind, key, value)`` writes the record that
``add_record(lsm.batch.encode_single(seq, kind, key, value))`` would, and
``add_batch(seq, ops)`` that of ``add_record(lsm.batch.encode_record(seq,
ops))``, building the payload in place with _write_batch.pxd's functions
(tests check them byte for byte).
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy, memset
cimport cython

from lsm._coding cimport encode_fixed32 as _put32, mask_crc
from lsm._crc32 cimport lsm_crc32
from lsm._fileio cimport OSAppendFile
from lsm._write_batch cimport batch_size, encode_payload, put_batch, put_single, single_size

from lsm.errors import ClosedError, ReadOnlyError

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
        n = single_size(kind, key, value)
        if n + LOG_HEADER_SIZE <= self.room:            # one FULL record
            p = self._scratch(n + LOG_HEADER_SIZE)
            put_single(p + LOG_HEADER_SIZE, seq, kind, key, value)
            _header(p, n, LOG_FULL)
            return self._emit(p, n + LOG_HEADER_SIZE, self.room - n - LOG_HEADER_SIZE)
        payload = PyBytes_FromStringAndSize(NULL, n)
        put_single(<unsigned char*>PyBytes_AS_STRING(payload), seq, kind, key, value)
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
        n = batch_size(ops)
        if n + LOG_HEADER_SIZE <= self.room:
            p = self._scratch(n + LOG_HEADER_SIZE)
            put_batch(p + LOG_HEADER_SIZE, seq, ops)
            _header(p, n, LOG_FULL)
            return self._emit(p, n + LOG_HEADER_SIZE, self.room - n - LOG_HEADER_SIZE)
        payload = encode_payload(seq, ops)
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
