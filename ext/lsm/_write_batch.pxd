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
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy

from lsm._coding cimport encode_fixed32 as _put32, encode_fixed64 as _put64
from lsm._keys cimport KIND_VALUE


cdef class WriteBatch:
    cdef list _ops
    cdef Py_ssize_t _bytes


cdef bytes encode_payload(uint64_t seq, list ops)

# For a caller that routes a batch by its keys (the region server, through
# lsm/_api.pxd) without reading its operations or their kinds.
cdef object batch_first_key(object batch)
cdef Py_ssize_t batch_len_within(WriteBatch batch, bytes start, object end) except -1


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
    """Payload bytes of the batch record of ``ops``."""
    cdef Py_ssize_t n = 12, i
    cdef tuple op
    for i in range(len(ops)):
        op = <tuple?>ops[i]
        n += 5 + PyBytes_GET_SIZE(<bytes?>op[1])
        if <int>op[0] == KIND_VALUE:
            n += 4 + PyBytes_GET_SIZE(<bytes?>op[2])
    return n


cdef inline void put_batch(unsigned char* q, uint64_t seq, list ops):
    """Write the batch record of ``ops`` (sized by ``batch_size``) at ``q``."""
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
