from libc.stdint cimport uint64_t

from lsm._iter cimport InternalIterator

# A consumer of a scan's entries in place (DBIterator.feed, lsm/_api.pxd's
# point_scan_into): called with a visible entry's user key and value, valid
# only during the call; returns 0 to go on, 1 to stop after this entry, -1
# with an exception set.
ctypedef int (*entry_fn)(void* ctx, const unsigned char* key, Py_ssize_t klen,
                         const unsigned char* value, Py_ssize_t vlen) except -1


cdef class DBIterator:
    cdef InternalIterator _it
    cdef uint64_t _snap
    cdef bytes _start
    cdef bytes _end
    cdef bint _valid
    cdef bint _forward
    cdef bint _reverse        # the direction of iteration by __next__ (begin())
    cdef bytes _key
    cdef bytes _value
    cdef public object pin     # keeps the version/snapshot alive while iterating

    cdef bint _past_end(self, bytes ikey) noexcept
    cdef bint _before_start(self, bytes ikey) noexcept
    cdef _find_next(self, bint skipping, bytes skip)
    cdef _find_prev(self)
    cpdef next(self)
    cpdef prev(self)
    cdef Py_ssize_t feed(self, Py_ssize_t limit, bint reverse, entry_fn fn, void* ctx,
                         bint* stopped) except -1
