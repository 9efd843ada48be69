# The batch of a write and its WAL record's payload, in C (lsm._write_batch;
# LevelDB's write_batch.cc): WriteBatch for the write path (lsm._write), and
# the payload built in place, for the log writer (lsm._log_writer).
# lsm/batch.py owns the record's format and documents it; tests/test_record.py
# checks these bytes against it:
#
#   payload := sequence:fixed64le  count:fixed32le
#              (kind:uint8  key_len:fixed32le  key  [value_len:fixed32le  value])*
#
# (the value and its length only for a put, kind KIND_VALUE).
#
# An operation ("op") of a record is a tuple of one of two shapes, read by
# op_kind, op_key and op_value below: a WriteBatch's (kind, key, value), or a
# (key, value) pair, value None a delete (DB.write_pairs': how the region
# server hands its writes to lsm, with no kinds and no WriteBatch).  The key
# is always the tuple's second-to-last item, the value its last.
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy

from lsm._coding cimport encode_fixed32 as _put32, encode_fixed64 as _put64
from lsm._keys cimport KIND_DELETE, KIND_VALUE


cdef class WriteBatch:
    cdef list _ops
    cdef Py_ssize_t _bytes
    cdef Py_ssize_t _longest_key, _longest_value   # of _ops: the write path's length check


cdef bytes encode_payload(uint64_t seq, list ops)
cdef Py_ssize_t pairs_bytes(list pairs) except -1


cdef inline int op_kind(tuple op) except -1:
    """KIND_VALUE or KIND_DELETE of ``op`` (either shape, checked)."""
    if PyTuple_GET_SIZE(op) == 2:
        return KIND_DELETE if <object>PyTuple_GET_ITEM(op, 1) is None else KIND_VALUE
    return <int>op[0]


cdef inline bytes op_key(tuple op):
    """The key of ``op`` (either shape, checked)."""
    return <bytes>PyTuple_GET_ITEM(op, PyTuple_GET_SIZE(op) - 2)


cdef inline bytes op_value(tuple op):
    """The value of ``op`` (either shape, checked): a put's; a delete's is
    b"" in a WriteBatch, None in a pair."""
    return <bytes>PyTuple_GET_ITEM(op, PyTuple_GET_SIZE(op) - 1)


cdef inline Py_ssize_t single_size(int kind, bytes key, bytes value):
    """Payload bytes of the one-entry batch record of a put or delete."""
    return 17 + PyBytes_GET_SIZE(key) + ((4 + PyBytes_GET_SIZE(value)) if kind == KIND_VALUE else 0)


cdef inline void put_single(unsigned char* q, uint64_t seq, int kind, bytes key, bytes value):
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


cdef inline Py_ssize_t batch_size(list ops) except -1:
    """Payload bytes of the batch record of ``ops`` (either shape, checked)."""
    cdef Py_ssize_t n = 12, i
    cdef tuple op
    for i in range(len(ops)):
        op = <tuple?>ops[i]
        n += 5 + PyBytes_GET_SIZE(op_key(op))
        if op_kind(op) == KIND_VALUE:
            n += 4 + PyBytes_GET_SIZE(op_value(op))
    return n


cdef inline void put_batch(unsigned char* q, uint64_t seq, list ops):
    """Write the batch record of ``ops`` (sized by ``batch_size``) at ``q``."""
    cdef Py_ssize_t i, kn, vn, count = len(ops)
    cdef int kind
    cdef tuple op
    cdef bytes key, value
    _put64(q, seq)
    _put32(q + 8, <uint32_t>count)
    q += 12
    for i in range(count):
        op = <tuple>ops[i]
        kind = op_kind(op)
        key = op_key(op)
        kn = PyBytes_GET_SIZE(key)
        q[0] = <unsigned char>kind
        _put32(q + 1, <uint32_t>kn)
        memcpy(q + 5, PyBytes_AS_STRING(key), kn)
        q += 5 + kn
        if kind == KIND_VALUE:
            value = op_value(op)
            vn = PyBytes_GET_SIZE(value)
            _put32(q, <uint32_t>vn)
            memcpy(q + 4, PyBytes_AS_STRING(value), vn)
            q += 4 + vn
