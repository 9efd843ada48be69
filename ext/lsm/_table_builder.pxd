# A table's build core (ext/lsm/_table_builder.pyx), for the C code that
# drains entries into it (lsm._compaction_stream), and the stored block's
# trailer: its C owner (lsm/block.py documents the grammar and re-exports
# these values to Python; a mapped table's reads are handed them from there).
#
#   stored_block := payload type:uint8 crc:uint32le
#   crc          := mask(crc32(payload ‖ type))       (mask: _coding.pxd)
from libc.stdint cimport uint64_t

from lsm._block cimport ADD_NO_MEMORY, ADD_TOO_LARGE, BlockBuilder
from lsm._fileio cimport OSAppendFile

cpdef enum:
    TYPE_RAW = 0                 # never renumber: written to disk
    TYPE_ZSTD = 1                # never renumber: written to disk
    TRAILER_SIZE = 5             # type + crc


cdef enum:
    # add_nogil's results besides 0 (raise_error raises the failures)
    BUILD_TOO_LARGE = ADD_TOO_LARGE
    BUILD_NO_MEMORY = ADD_NO_MEMORY
    BUILD_ORDER = 3              # a key not above the one before
    BUILD_SHORT_KEY = 4          # an internal key under 8 bytes
    BUILD_CLOSED = 5             # after finish() or abandon()
    BUILD_IO = 6                 # the file's write failed (its errno kept)
    BUILD_NEED_GIL = 7           # not a failure: blocks to hand to a file that needs the GIL


cdef class TableBuildCore:
    # entries -> data blocks (and the bloom digests of their user keys)
    cdef BlockBuilder data
    cdef Py_ssize_t block_size
    cdef bint bloom
    cdef unsigned char* digests
    cdef Py_ssize_t ndigest_bytes, digest_cap
    cdef unsigned char* firstk     # the first and the last internal key added
    cdef unsigned char* lastk
    cdef Py_ssize_t firstn, lastn, firstcap, lastcap
    cdef readonly uint64_t num_entries, raw_key_bytes, raw_value_bytes
    cdef public bint closed
    # data blocks -> stored blocks -> the file, and the index of the data blocks
    cdef object f
    cdef OSAppendFile osf          # f when it is the OS's (written from ``out`` in C), else None
    cdef object compress           # the compressor's ``compress`` for data blocks, or None
    cdef readonly bint raw         # no compressor: add_nogil may be used
    cdef unsigned char* out        # stored blocks not yet appended
    cdef Py_ssize_t out_len, out_cap, write_buffer
    cdef readonly uint64_t offset  # bytes of stored blocks so far (appended or in ``out``)
    cdef readonly uint64_t num_data_blocks
    cdef BlockBuilder index
    cdef int io_errno              # of the failed write of a BUILD_IO

    cdef int add_raw(self, const unsigned char* k, Py_ssize_t kn, const unsigned char* v,
                     Py_ssize_t vn) noexcept nogil
    cdef int add_nogil(self, const unsigned char* k, Py_ssize_t kn, const unsigned char* v,
                       Py_ssize_t vn) noexcept nogil
    cdef int write_out_pending(self) except -1
    cdef int raise_error(self, int rc) except -1
    cdef int add_entry(self, bytes ikey, bytes value) except -1
    cpdef uint64_t size_estimate(self)
    cdef int _add_digest(self, const unsigned char* k, Py_ssize_t kn) noexcept nogil
    cdef int _finish_data_block(self) except -1
    cdef int _finish_raw_block(self) noexcept nogil
    cdef int _stored(self, Py_ssize_t n, unsigned char btype, unsigned char* h) noexcept nogil
    cdef bytes _store(self, bytes contents, object compress)
    cdef int _reserve(self, Py_ssize_t n) noexcept nogil
    cdef int _write_out(self) except -1

    cdef inline uint64_t estimate(self) noexcept nogil:
        """``size_estimate`` in C."""
        return self.offset + <uint64_t>(self.data.encoded_size() if self.data.nentries else 0)
