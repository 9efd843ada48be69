# A table's build core (ext/lsm/_table_builder.pyx), for the C code that
# drains entries into it (lsm._compaction_stream), and the stored block's
# trailer: its C owner (lsm/block.py documents the grammar and re-exports
# these values to Python; a mapped table's reads are handed them from there).
#
#   stored_block := payload type:uint8 crc:uint32le
#   crc          := mask(crc32(payload ‖ type))       (mask: _coding.pxd)
from libc.stdint cimport uint64_t

from lsm._block cimport BlockBuilder
from lsm._fileio cimport OSAppendFile

cpdef enum:
    TYPE_RAW = 0                 # never renumber: written to disk
    TYPE_ZSTD = 1                # never renumber: written to disk
    TRAILER_SIZE = 5             # type + crc


cdef class TableBuildCore:
    # entries -> data blocks (and the bloom digests of their user keys)
    cdef BlockBuilder data
    cdef Py_ssize_t block_size
    cdef bint bloom
    cdef unsigned char* digests
    cdef Py_ssize_t ndigest_bytes, digest_cap
    cdef bytes first_key, last_key
    cdef readonly uint64_t num_entries, raw_key_bytes, raw_value_bytes
    cdef public bint closed
    # data blocks -> stored blocks -> the file, and the index of the data blocks
    cdef object f
    cdef OSAppendFile osf          # f when it is the OS's (written from ``out`` in C), else None
    cdef object compress           # the compressor's ``compress`` for data blocks, or None
    cdef unsigned char* out        # stored blocks not yet appended
    cdef Py_ssize_t out_len, out_cap, write_buffer
    cdef readonly uint64_t offset  # bytes of stored blocks so far (appended or in ``out``)
    cdef readonly uint64_t num_data_blocks
    cdef BlockBuilder index

    cdef int add_entry(self, bytes ikey, bytes value) except -1
    cpdef uint64_t size_estimate(self)
    cdef int _add_digest(self, bytes ikey) except -1
    cdef int _finish_data_block(self) except -1
    cdef bytes _store(self, bytes contents, object compress)
    cdef int _reserve(self, Py_ssize_t n) except -1
    cdef int _write_out(self) except -1
