# The memtable's point read (_memtable.pyx), for lsm._read, its writes, for lsm._write,
# and a frozen memtable's entries as a C array, for a flush (lsm._compaction_stream).
from libc.stdint cimport uint32_t, uint64_t
from cpython.ref cimport PyObject

cimport cython

from lsm._iter cimport InternalIterator, RawEntry

cdef extern from *:
    """
    #ifndef lsm_prefetch
    #define lsm_prefetch(p) __builtin_prefetch((const void*)(p))
    #endif
    """
    # Ask the CPU for the line at ``p`` (no fault if it is not mapped): the
    # memtable's lookups, and lsm._read's batches of them.
    void lsm_prefetch(const void* p) noexcept nogil


@cython.final
@cython.no_gc
cdef class Version:
    cdef readonly uint64_t seq
    cdef readonly int kind
    cdef uint32_t slotp            # 1 + the prefix-table slot holding it, 0: none (_memtable.pyx)
    cdef readonly bytes value
    cdef readonly Version prev


ctypedef Py_ssize_t (*prefix_fn)(const unsigned char* key, Py_ssize_t n,
                                 Py_ssize_t arg) noexcept nogil


ctypedef struct Slot:
    uint32_t hash              # of the prefix
    uint32_t plen              # its length, | MULTI: more than one key has it (_memtable.pyx)
    PyObject* key              # NULL: empty; else the first key filed with it
    PyObject* version          # that key's newest Version (a reference), NULL once MULTI


cdef class PrefixExtractor:
    cdef prefix_fn fn          # the length of key[:n]'s prefix, or -1: none
    cdef Py_ssize_t arg        # handed to fn (fixed_prefix: the length)
    cdef readonly str name


cdef class MemTable:
    cdef public dict versions
    cdef public object _sorted, lock
    cdef public list _pending
    cdef readonly bint _merging
    cdef public Py_ssize_t approximate_bytes, entries, overhead
    cdef readonly PrefixExtractor prefix_extractor   # of the prefix index, or None
    cdef Slot* _slots          # the prefix table (_memtable.pyx: _index_key, _bucket_walk)
    cdef Py_ssize_t _nslots, _nused
    cdef bint _has_keys_in(self, lo, hi) except -1


cdef extern from "Python.h":
    # A frozen entry's key or value bytes, read without the GIL (the objects
    # are immutable and kept alive by the frozen memtable): the macros, nogil.
    char* frozen_bytes "PyBytes_AS_STRING" (PyObject* o) nogil
    Py_ssize_t frozen_size "PyBytes_GET_SIZE" (PyObject* o) nogil


ctypedef struct FrozenEntry:
    PyObject* key              # the user key (bytes), held by the memtable's dict
    PyObject* value            # the value (bytes), held by its Version
    uint64_t tag


cdef class FrozenIterator(InternalIterator):
    cdef dict _versions        # keeps every key and Version of the entries alive
    cdef FrozenEntry* entries  # in internal-key order
    cdef Py_ssize_t n, cap
    cdef Py_ssize_t pos        # the current entry (== n: invalid)
    cdef int _gather(self, PyObject* key, Version v) except -1


cpdef Version get_version(dict versions, bytes key, uint64_t seq)
cdef void prefix_prefetch(MemTable mem, bytes lo, bint key) noexcept
cdef int prefix_one(MemTable mem, bytes lo, bytes hi, uint64_t seq, PyObject** key,
                    PyObject** version) noexcept
cpdef int visible_range(MemTable mem, bytes lo, bytes hi, uint64_t seq, list out,
                        Py_ssize_t cap) except -2
cpdef add_entry(MemTable mem, uint64_t seq, int kind, bytes key, bytes value)
cpdef add_entries(MemTable mem, uint64_t seq, list ops)
