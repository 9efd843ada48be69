# The memtable's point read (_memtable.pyx), for lsm._read, and its writes, for lsm._record.
from libc.stdint cimport uint64_t

cimport cython


@cython.final
@cython.no_gc
cdef class Version:
    cdef readonly uint64_t seq
    cdef readonly int kind
    cdef readonly bytes value
    cdef readonly Version prev


cdef class MemTable:
    cdef public dict versions
    cdef public object _sorted, lock
    cdef public list _pending
    cdef readonly bint _merging
    cdef public Py_ssize_t approximate_bytes, entries, overhead
    cdef bint _has_keys_in(self, lo, hi) except -1


cpdef Version get_version(dict versions, bytes key, uint64_t seq)
cpdef int visible_range(MemTable mem, bytes lo, bytes hi, uint64_t seq, list out,
                        Py_ssize_t cap) except -2
cpdef add_entry(MemTable mem, uint64_t seq, int kind, bytes key, bytes value)
cpdef add_entries(MemTable mem, uint64_t seq, list ops)
