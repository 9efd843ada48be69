# The block cache (_blockcache.pyx), for the point read's C entry (_table.pyx).
cimport cython
from libc.stdint cimport uint64_t


@cython.final
cdef class _Slot:
    cdef object key
    cdef object owner
    cdef uint64_t offset          # of the block in its table (for PointReader's check)
    cdef object value             # None once erased or evicted
    cdef void* block              # value, borrowed, for reads without the GIL; NULL once dropped
    cdef Py_ssize_t charge
    cdef bint referenced
    cdef bint dead


cdef class BlockCache:
    cdef readonly Py_ssize_t capacity
    cdef readonly Py_ssize_t usage
    cdef readonly long long hits, misses
    cdef object _lock
    cdef dict _map                # _key(owner, offset) -> _Slot
    cdef object _ring             # deque of _Slot, oldest first (the clock hand at the left)
    cdef object _append, _popleft # _ring's, bound once
    cdef object _acquire, _release  # _lock's, bound once
    cdef Py_ssize_t _dead         # dead shells in the ring
    cdef dict _by_owner           # owner -> set of keys
    cdef object lookup(self, object owner, uint64_t offset)
    cdef _Slot slot_of(self, object owner, uint64_t offset)
    cdef int put(self, object owner, uint64_t offset, object value, Py_ssize_t charge) except -1
    cdef int _insert(self, object key, object owner, uint64_t offset, object value,
                     Py_ssize_t charge) except -1
    cdef object _get(self, object key)
    cdef object _key_of(self, object key)
    cdef void _drop(self, object key) except *
    cdef void _compact(self) except *
    cdef void _set_ring(self, object ring) except *


# Reads without the GIL (module doc, "Reads without the GIL"): all three are
# called with the GIL held.
cdef int read_enter() noexcept
cdef void read_exit(int epoch) noexcept
cdef int bury(object o) except -1
