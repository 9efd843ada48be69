# The WAL record framing of lsm._record, for the write path (lsm._write).
from libc.stdint cimport uint64_t

cdef bytes _frame_single(uint64_t seq, int kind, bytes key, bytes value, Py_ssize_t block_left)
cdef bytes _encode_batch(uint64_t seq, list ops)
cdef bytes _frame_batch(uint64_t seq, list ops, Py_ssize_t block_left)


cdef class WriteBatch:
    cdef list _ops
    cdef Py_ssize_t _bytes
