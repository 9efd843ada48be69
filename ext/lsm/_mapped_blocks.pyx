# cython: language_level=3
"""A table file's data blocks read in place from its mapping: the buffer
held (``MappedBlocks``) and what is known of its blocks; the read of one
block (``map_block``) is inline in _mapped_blocks.pxd, for the point
reader (lsm._table), which searches it without the GIL.  The trailer a
block is checked by is documented at the top of lsm/sstable.py.
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport uint64_t
from libc.stdlib cimport calloc, free


cdef class MappedBlocks:
    """A table file's data blocks read in place from its mapping (LevelDB
    reads an mmapped table this way: it caches no block it reads from a
    mapping).  Holds the buffer (``PointReader.attach_source``) until it is
    freed, which ``PointReader.detach_source`` defers (``bury``) while a
    search without the GIL may read it.

    A block is read in place when its handle lies within the data, its type
    is raw and it is found good the first time: its CRC (when ``verify``)
    and its restart array checked whole (``block_shape``).  That first check
    is remembered per index entry (``checked``: the block's offset + 1), as
    a cached block's is: a page of the file that changed on disk after it
    was checked is not checked again.  Anything else is read through the
    block cache and ``fill``, which decompresses it or says what is wrong.
    """
    def __cinit__(self, buf, Py_ssize_t data_end, bint verify, int raw_type, Py_ssize_t trailer,
                  Py_ssize_t overhead, Py_ssize_t nblocks, int zstd_type=-1):
        PyObject_GetBuffer(buf, &self.view, PyBUF_SIMPLE)
        self.held = True
        self.c.checked = <uint64_t*>calloc(max(nblocks, 1), sizeof(uint64_t))
        if self.c.checked == NULL:
            raise MemoryError()
        self.c.base = <const unsigned char*>self.view.buf
        self.c.end = min(data_end, self.view.len)
        self.c.verify, self.c.raw_type, self.c.zstd_type = verify, raw_type, zstd_type
        self.c.trailer, self.c.overhead, self.c.nblocks = trailer, overhead, nblocks

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.view)
        free(self.c.checked)
