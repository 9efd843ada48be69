# The log writer, in C (lsm._log_writer; LevelDB's log_writer.cc), for the
# write path (lsm._write) and lsm.wal, which holds its reader.
from libc.stdint cimport uint64_t
cimport cython

from lsm._fileio cimport OSAppendFile

# The log format (lsm/wal.py documents it; docs/formats/wal.md).  Never
# renumber: these are on disk.
cdef enum:
    LOG_BLOCK_SIZE = 32768
    LOG_HEADER_SIZE = 7         # checksum:uint32le  length:uint16le  type:uint8
    LOG_FULL = 1                # 0 is reserved: zero fill
    LOG_FIRST = 2
    LOG_MIDDLE = 3
    LOG_LAST = 4


@cython.final
cdef class LogWriter:
    cdef object _f, _error
    cdef OSAppendFile _os
    cdef readonly Py_ssize_t room
    cdef unsigned char* _buf
    cdef Py_ssize_t _cap

    cdef unsigned char* _scratch(self, Py_ssize_t n) except NULL
    cdef int _emit(self, const unsigned char* p, Py_ssize_t n, Py_ssize_t room) except -1
    cdef int _refuse(self) except -1
    cdef int _add(self, const unsigned char* payload, Py_ssize_t n) except -1
    cpdef int add_single(self, uint64_t seq, int kind, bytes key, bytes value) except -1
    cpdef int add_batch(self, uint64_t seq, list ops) except -1
