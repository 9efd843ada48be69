# cython: language_level=3
"""The batch of a write, in C (``lsm.WriteBatch``; LevelDB's write_batch.cc),
and its WAL record's payload.

``WriteBatch`` holds the ``(kind, key, value)`` operations that ``DB.write``
applies atomically; it is in C so that the write path (lsm._write) and the
log writer (lsm._log_writer) read its operations without a Python call.
``DB.write_pairs`` applies ``(key, value)`` pairs (value None: a delete) the
same way with no batch made (``pairs_bytes`` checks them): the record is
built from either shape (_write_batch.pxd).
The record's payload (lsm/batch.py owns and documents the format; the grammar
is at the top of _write_batch.pxd, whose inline functions build it in place
for the log writer) is ``encode_batch`` here: ``lsm.batch.encode_record`` in
one C buffer, which tests/test_record.py checks byte for byte.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t

from lsm._keys cimport KIND_DELETE, KIND_VALUE

from lsm.arguments import check_key, check_value


def encode_batch(uint64_t seq, list ops not None):
    """``lsm.batch.encode_record(seq, ops)``: ops are (kind, key, value) tuples
    of bytes (``WriteBatch`` checked them), or (key, value) pairs
    (``pairs_bytes`` checked them), the record the same."""
    return encode_payload(seq, ops)


cdef bytes encode_payload(uint64_t seq, list ops):
    cdef Py_ssize_t n = batch_size(ops)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n)
    put_batch(<unsigned char*>PyBytes_AS_STRING(out), seq, ops)
    return out


cdef Py_ssize_t pairs_bytes(list pairs) except -1:
    """The key and value bytes of ``pairs``, the (key, value) tuples of
    ``DB.write_pairs`` (value None: a delete), checked as ``put`` and
    ``delete`` check theirs, lengths aside (the DB's Options apply when they
    are written): raises TypeError or ValueError naming the first bad one."""
    cdef Py_ssize_t total = 0, i
    cdef object op, key, value
    for i in range(len(pairs)):
        op = pairs[i]
        if type(op) is not tuple or len(<tuple>op) != 2:
            raise TypeError(f"operation {i} must be a (key, value) tuple, got {op!r}")
        key, value = <tuple>op
        if type(key) is not bytes or PyBytes_GET_SIZE(key) == 0:
            check_key(key, 1 << 62)
        if value is not None:
            if type(value) is not bytes:
                check_value(value, 1 << 62)
            total += PyBytes_GET_SIZE(value)
        total += PyBytes_GET_SIZE(key)
    return total


# -- the batch ---------------------------------------------------------------
cdef class WriteBatch:
    """Puts and deletes applied atomically by ``DB.write``, in order.

    Arguments are checked when added, so a bad one raises at once and the
    batch stays as it was.  Not thread-safe; reusable after ``clear()``.
    (In C, so that the write path reads its operations without a Python
    call; ``lsm.batch`` owns its record format.)

    >>> b = WriteBatch().put(b"k", b"v").delete(b"old")
    >>> len(b), b.ops[1]
    (2, (0, b'old', b''))
    >>> b.ops[0][0] == WriteBatch.PUT
    True
    """

    #: The kinds of ``ops`` (lsm/dbformat.py's, never renumbered): what a
    #: reader of ``ops`` needs of the record kinds.
    PUT = KIND_VALUE
    DELETE = KIND_DELETE

    #: Limits checked when the batch is written (the DB's Options apply);
    #: here only types and emptiness, so a batch can be built without a DB.
    def __init__(self):
        self.clear()

    def put(self, key, value):
        if type(key) is not bytes or PyBytes_GET_SIZE(key) == 0 or type(value) is not bytes:
            check_key(key, 1 << 62)
            check_value(value, 1 << 62)
        self._ops.append((KIND_VALUE, key, value))
        self._bytes += PyBytes_GET_SIZE(key) + PyBytes_GET_SIZE(value)
        if PyBytes_GET_SIZE(key) > self._longest_key:
            self._longest_key = PyBytes_GET_SIZE(key)
        if PyBytes_GET_SIZE(value) > self._longest_value:
            self._longest_value = PyBytes_GET_SIZE(value)
        return self

    def delete(self, key):
        if type(key) is not bytes or PyBytes_GET_SIZE(key) == 0:
            check_key(key, 1 << 62)
        self._ops.append((KIND_DELETE, key, b""))
        self._bytes += PyBytes_GET_SIZE(key)
        if PyBytes_GET_SIZE(key) > self._longest_key:
            self._longest_key = PyBytes_GET_SIZE(key)
        return self

    def clear(self):
        self._ops = []
        self._bytes = self._longest_key = self._longest_value = 0

    def __len__(self):
        return len(self._ops)

    @property
    def approximate_bytes(self):
        return self._bytes

    @property
    def ops(self):
        """The (kind, key, value) operations, in order (read-only use)."""
        return self._ops
