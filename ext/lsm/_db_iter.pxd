from libc.stdint cimport uint64_t

from lsm._iter cimport InternalIterator


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
