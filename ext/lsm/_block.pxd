# Blocks of the SSTable format (grammar at the top of _block.pyx), shared
# with _table_builder.pyx, _table_iter.pyx and _table.pyx, which build and read tables on top.
from libc.stdint cimport uint32_t, uint64_t
from lsm._iter cimport InternalIterator


cdef int block_shape(const unsigned char* p, Py_ssize_t n, Py_ssize_t* limit,
                     uint32_t* nrest) noexcept nogil
cpdef object zstd_decompressor()
cdef Block block_in_place(object owner, const unsigned char* p, Py_ssize_t limit, uint32_t nrest)
cdef int block_find(const unsigned char* d, Py_ssize_t limit, uint32_t nrest,
                    const unsigned char* t, Py_ssize_t tn, unsigned char* kbuf, Py_ssize_t kcap,
                    Py_ssize_t* klen, Py_ssize_t* voff, Py_ssize_t* vlen) noexcept nogil


cdef enum:
    ADD_TOO_LARGE = 1              # BlockBuilder.add_raw's failures (raise_add_error)
    ADD_NO_MEMORY = 2


cdef class BlockBuilder:
    cdef int restart_interval
    cdef unsigned char* buf
    cdef Py_ssize_t size, cap
    cdef uint32_t* restarts
    cdef Py_ssize_t nrestarts, rcap
    cdef int counter
    cdef Py_ssize_t nentries
    cdef unsigned char* lastk      # the last key added (its prefix is shared by the next)
    cdef Py_ssize_t lastn, lastcap
    cdef int _reserve(self, Py_ssize_t extra) noexcept nogil
    cdef int add_raw(self, const unsigned char* k, Py_ssize_t kn, const unsigned char* v,
                     Py_ssize_t vn) noexcept nogil
    cdef int _add(self, bytes key, bytes value) except -1
    cdef void clear(self) noexcept nogil
    cdef void finish_into(self, unsigned char* d) noexcept nogil
    cpdef bytes finish(self)
    cpdef reset(self)
    cpdef Py_ssize_t size_estimate(self)

    cdef inline Py_ssize_t encoded_size(self) noexcept nogil:
        """Bytes the block takes once finished (``size_estimate`` in C)."""
        return self.size + 4 * self.nrestarts + 4


cdef int raise_add_error(int rc) except -1


cdef class Block:
    cdef readonly object data      # its bytes, or what keeps them (block_in_place)
    cdef const unsigned char* ptr
    cdef Py_ssize_t limit          # offset of the restart array = end of entries
    cdef uint32_t num_restarts
    cdef uint64_t* prefixes        # per restart key: 8 bytes after the common prefix, or NULL
    cdef Py_ssize_t common         # bytes every restart's user key shares with restart 0's
    cdef const unsigned char* key0 # restart 0's key (inside data)
    cdef int _restart_key(self, uint32_t i, const unsigned char** k,
                          Py_ssize_t* kn) noexcept nogil
    cdef int _build_prefixes(self) noexcept
    cdef int _restart_search(self, const unsigned char* t, Py_ssize_t tn,
                             uint32_t* found) noexcept nogil
    cpdef BlockIter iterator(self)
    cdef int find(self, const unsigned char* t, Py_ssize_t tn, unsigned char* kbuf, Py_ssize_t kcap,
                  Py_ssize_t* klen, Py_ssize_t* voff, Py_ssize_t* vlen,
                  Py_ssize_t* ordinal=*) noexcept nogil
    cdef int next_entry(self, Py_ssize_t* pos, unsigned char* kbuf, Py_ssize_t kcap,
                        Py_ssize_t* klen, Py_ssize_t* voff, Py_ssize_t* vlen) noexcept nogil


cdef class BlockIter(InternalIterator):
    cdef Block block
    cdef const unsigned char* ptr
    cdef Py_ssize_t limit
    cdef Py_ssize_t cur            # offset of the current entry; == limit: invalid
    cdef Py_ssize_t nxt            # offset just past the current entry
    cdef uint32_t restart_index    # restart block holding the current entry
    cdef unsigned char* kbuf       # the current key, rebuilt from prefix + delta
    cdef Py_ssize_t klen, kcap
    cdef Py_ssize_t voff, vlen     # the current value, a slice of block.data
    cdef int _parse_next(self) except -1
    cdef int _seek_to_restart(self, uint32_t i)
    cdef int _seek_raw(self, const unsigned char* t, Py_ssize_t tn) except -1
    cdef int _corrupt(self, str what) except -1
    cdef int value_handle(self, uint64_t* offset, uint64_t* size) except -1
