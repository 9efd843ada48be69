# cython: language_level=3
"""The one file operation done in C: a small ``write(2)`` that keeps the GIL.

Used by ``lsm.fs._OSAppendFile.append`` (lsm/fs.py) for appends up to
``_SMALL_WRITE`` bytes, on a descriptor lsm/fs.py opened; error mapping,
short writes and sizes stay there.  No other extension touches files.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE


cdef extern from "unistd.h" nogil:
    ssize_t c_write "write" (int fd, const void* buf, size_t count)

cdef extern from "errno.h":
    int errno


def write_holding_gil(int fd, bytes data):
    """``os.write(fd, data)`` without releasing the GIL.

    For small appends (a WAL record: a memcpy into the page cache, ~1 us).
    ``os.write`` releases and re-takes the GIL around every call, and a
    thread that gives the GIL up waits one switch interval (5 ms) to get it
    back while another thread computes: a reader scanning in a loop would
    throttle writers to ~200 puts/s.  Returns the bytes written; raises
    OSError like os.write.
    """
    cdef ssize_t n = c_write(fd, PyBytes_AS_STRING(data), <size_t>PyBytes_GET_SIZE(data))
    if n < 0:
        import os
        raise OSError(errno, os.strerror(errno))
    return n
