# A table file's data blocks read in place from its mapping (lsm._mapped_blocks),
# for the point reader (lsm._table): the buffer held, and the read of one block
# inline, as it runs without the GIL on every point read of a mapped table.
from libc.stdint cimport uint32_t, uint64_t
from lsm._block cimport block_shape
from lsm._coding cimport decode_fixed32, mask_crc
from lsm._crc32 cimport lsm_crc32


cdef struct MapC:
    const unsigned char* base    # the file's bytes
    Py_ssize_t end               # where its data blocks end (within the buffer)
    bint verify                  # check a block's CRC (once: ``checked``)
    int raw_type                 # the trailer's type byte of an uncompressed block
    int zstd_type                # ... of a zstd-compressed one (-1: none read in C)
    Py_ssize_t trailer           # bytes of a block's trailer
    Py_ssize_t overhead          # what a block cached costs beyond its bytes
    uint64_t* checked            # per index entry number: 1 + the offset of its block once found good
    Py_ssize_t nblocks


cdef class MappedBlocks:
    cdef Py_buffer view
    cdef bint held
    cdef MapC c


cdef inline const unsigned char* stored_block(const MapC* m, uint64_t off, uint64_t size, Py_ssize_t ordinal,
                                         int btype, bint* known) noexcept nogil:
    """The payload of the stored block at ``off`` when its handle lies in
    the data, its type is ``btype`` and its CRC is right (unless not
    ``verify``); ``*known`` when it was found good before (``checked``).
    NULL otherwise."""
    cdef uint64_t end = off + size + <uint64_t>m.trailer
    cdef const unsigned char* p
    known[0] = False
    if end < off or end > <uint64_t>m.end:
        return NULL
    p = m.base + off
    if p[size] != btype:
        return NULL
    if 0 <= ordinal < m.nblocks and m.checked[ordinal] == off + 1:
        known[0] = True
        return p
    if m.verify and mask_crc(lsm_crc32(0, p, size + 1)) != decode_fixed32(p + size + 1):
        return NULL
    return p


cdef inline const unsigned char* map_block(const MapC* m, uint64_t off, uint64_t size, Py_ssize_t ordinal,
                                    Py_ssize_t* limit, uint32_t* nrest) noexcept nogil:
    """The raw data block at ``off`` (``size`` bytes; index entry number
    ``ordinal``) in place, with its ``block_shape``; NULL when it must be
    read through the cache (MappedBlocks)."""
    cdef const unsigned char* p
    cdef bint known
    if size < 4:
        return NULL
    p = stored_block(m, off, size, ordinal, m.raw_type, &known)
    if p == NULL:
        return NULL
    if known:
        nrest[0] = decode_fixed32(p + size - 4)
        limit[0] = <Py_ssize_t>size - 4 - 4 * <Py_ssize_t>nrest[0]
        return p
    if block_shape(p, <Py_ssize_t>size, limit, nrest) != 0:
        return NULL
    if 0 <= ordinal < m.nblocks:
        m.checked[ordinal] = off + 1
    return p
