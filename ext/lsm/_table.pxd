# The point reader of a table (PointReader in _table.pyx), for lsm._read's DB-level
# point read and the table's two-level iterator (_table_iter.pyx).
from libc.stdint cimport uint64_t
from libc.stdint cimport uint32_t
from lsm._block cimport Block
from lsm._blockcache cimport BlockCache
from lsm._mapped_blocks cimport MapC, MappedBlocks


cdef class PointReader:
    cdef object _filter
    cdef Block _index
    cdef object _owner
    cdef object _fill
    cdef BlockCache _cache
    cdef bytes _lo, _hi
    cdef list _slots              # per index entry: its block's cache slot, or None
    # The same, read without the GIL (lookup_nogil): the bounds, the filter
    # and the slots' array (the list is never resized), as C pointers.
    cdef const unsigned char* _lo_p
    cdef const unsigned char* _hi_p
    cdef const unsigned char* _filter_p
    cdef Py_ssize_t _lo_n, _hi_n, _filter_n
    cdef void** _slot_items
    cdef Py_ssize_t _nslots
    # The table file's bytes, when it is a buffer (a mapping): its raw
    # data blocks are searched in place (attach_source).  ``_map_c`` is
    # ``&_map.c`` for lookup_nogil, NULL once detached.
    cdef MappedBlocks _map
    cdef MapC* _map_c
    cdef Block in_place(self, uint64_t off, uint64_t size, Py_ssize_t ordinal)
    cdef Block iter_block(self, uint64_t off, uint64_t size, Py_ssize_t ordinal)
    cdef object _read_fast(self, uint64_t off, uint64_t size, Py_ssize_t ordinal)
    cdef object _read_zstd(self, uint64_t off, uint64_t size, Py_ssize_t ordinal)
    cdef object lookup(self, const unsigned char* uk, Py_ssize_t un, const unsigned char* lk, Py_ssize_t lkn)
    cdef int lookup_nogil(self, const unsigned char* uk, Py_ssize_t un, const unsigned char* lk,
                          Py_ssize_t lkn, const unsigned char** vp, Py_ssize_t* vn,
                          Py_ssize_t* hits) noexcept nogil
    cdef object _slow(self, bytes lk)
    cdef Block _block_at(self, Py_ssize_t voff, Py_ssize_t vlen, Py_ssize_t ordinal)
    cdef int collect(self, const unsigned char* lo, Py_ssize_t lon, const unsigned char* lk,
                     Py_ssize_t lkn, const unsigned char* hi, Py_ssize_t hin, uint64_t seq,
                     list out, Py_ssize_t cap) except -2
