# The OS file system's append file, for the WAL writer (lsm._log_writer.LogWriter)
# and a table's build core (lsm._table_builder, which writes without the GIL).

cdef class OSAppendFile:
    cdef readonly object path
    cdef readonly long long size
    cdef int _fd
    cdef long long _step, _step_max, _end
    cdef char* _map
    cdef long long _map_off, _map_len
    cdef bint _map_ok

    cdef int write(self, const char* p, Py_ssize_t n) except -1
    cdef int write_nogil(self, const char* p, Py_ssize_t n) noexcept nogil
    cdef int raise_write_error(self, int err) except -1
    cdef int _write_all(self, const char* p, Py_ssize_t n, long long offset) except -1
    cdef int _zero_fill(self, long long start, long long want) except -1
    cdef bint _remap(self)
