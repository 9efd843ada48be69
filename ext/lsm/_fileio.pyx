# cython: language_level=3
"""``OSAppendFile``: the OS file system's append-only file, in C.

``lsm.fs.OSFileSystem.open_append`` opens the descriptor and hands it here;
everything else an append file does (append, sync, close) is done here, and
its failures are mapped by ``lsm.errors.storage_error`` like every other OS
error.  ``append`` takes any bytes-like object; ``write`` (declared in
_fileio.pxd) is the same for C callers.

Two kinds, as ``open_append`` asked:

- plain (``step`` 0, the descriptor opened with ``O_APPEND``): each append is
  a ``write(2)`` loop.  Appends up to ``SMALL_WRITE`` bytes keep the GIL: a
  thread that gives the GIL up waits one switch interval to get it back
  while another thread computes, so a reader scanning in a loop would
  throttle writers to one put a switch interval.  Larger ones release it.
- preallocated (``step`` > 0; the WAL): zeros are written ahead of the end,
  ``step`` bytes at a time, and the region from the page holding the end to
  the zeros' end is mapped shared.  An append that fits in the mapping is a
  ``memcpy`` into the page cache: what ``write(2)`` does, without the system
  call (what that saves a put: docs/performance.md, 2026-11-25, stop 23).  The bytes are with
  the OS once it returns, exactly as after ``write(2)``: they survive the
  process's death, and ``sync`` (``fdatasync``, which on Linux writes back
  pages dirtied through a mapping too) makes them survive power loss.  One
  difference: ``write(2)`` of a small buffer is never cut short by kill -9,
  while a ``memcpy`` can be, in any order of its bytes (glibc copies some
  sizes last bytes first); only the append in flight is torn, it was never
  acknowledged, and the WAL reader drops it as a torn tail.
  Space is allocated by the zeros before a byte is copied, so a full disk is
  an error of the append (ENOSPC) and never a SIGBUS.  An append that does
  not fit moves the mapping on (or, longer than ``step``, is written with
  ``pwrite``); if the OS refuses a mapping, appends carry on with ``pwrite``.
  One of 64 KiB or more (a large batch's record) that does not fit is one
  ``pwrite`` at the end, with no zeros laid for it: copied into zeros, each
  of its bytes would be written twice and the mapping moved on for it (for
  1000-put batches, 130 KB records, that was a quarter of the writer's CPU
  time); shorter appends after it lay zeros again from the end.  The
  ``pwrite`` allocates the space it writes, so a full disk stays an append
  error.
  The first ``sync`` ends the mapping for good, and appends carry on with
  ``pwrite`` into the zeros: an ``fdatasync`` over pages dirtied through a
  mapping must write-protect them again, and the next ``memcpy`` into each
  faults, which costs a durable put more than the system call saves
  (docs/performance.md, stop 23, "Durable writes and the mapping").  So a WAL that is synced pays nothing for the mapping,
  and one that is never synced (the default) never makes the system call.
  The zeros ahead start at 64 KiB and double up to ``step``: a store with
  many small WALs (a region server's regions) writes few zeros for each
  (performance.md, stop 23, "Many small WALs").
  Zeros are written 64 KiB at a time: writes into a page-cache folio cost
  in proportion to its size, and one 1 MiB ``pwrite`` makes 1 MiB folios
  (what that cost an append: performance.md, stop 23).  ``close`` trims the zeros.

Not thread-safe: one writer at a time (the DB serializes its WAL's writers).
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.string cimport memcpy, memset
from libc.stdlib cimport free, malloc

from os import strerror

from lsm.errors import ClosedError, storage_error

cdef extern from "errno.h":
    int errno
    enum: EINTR, EIO

cdef extern from "unistd.h" nogil:
    ssize_t c_write "write" (int fd, const void* buf, size_t count)
    ssize_t pwrite(int fd, const void* buf, size_t count, long long offset)
    int fdatasync(int fd)
    int ftruncate(int fd, long long length)
    int c_close "close" (int fd)
    long sysconf(int name)
    enum: _SC_PAGESIZE

cdef extern from *:
    """
    #include <sys/mman.h>
    #ifndef MAP_POPULATE
    #define MAP_POPULATE 0
    #endif
    """
    void* mmap(void* addr, size_t length, int prot, int flags, int fd, long long offset) nogil
    int munmap(void* addr, size_t length) nogil
    void* MAP_FAILED
    enum: PROT_READ, PROT_WRITE, MAP_SHARED, MAP_POPULATE

#: Appends up to this size keep the GIL (see the module doc).
SMALL_WRITE = 64 << 10
cdef enum:
    _SMALL = 64 << 10
    _ZERO_CHUNK = 64 << 10      # bytes of zeros per pwrite (see the module doc)
    _FIRST_STEP = 64 << 10      # the first zeros written ahead (see the module doc)
    _DIRECT = 64 << 10          # appends this long that miss the mapping: pwrite, no zeros (module doc)

cdef long long _PAGE = sysconf(_SC_PAGESIZE)


cdef _os_error(int err, str what, path):
    """The ``StorageError`` of a failed OS call (lsm.errors.storage_error)."""
    return storage_error(OSError(err, strerror(err)), what, path)


cdef int _write_loop(int fd, const char* p, Py_ssize_t n, long long offset,
                     Py_ssize_t* done) noexcept nogil:
    """``write(2)`` (offset < 0) or ``pwrite(2)`` ``p[:n]`` whole: 0, or the
    errno of the call that failed (``done``: the bytes written before)."""
    cdef ssize_t r
    while done[0] < n:
        r = c_write(fd, p + done[0], n - done[0]) if offset < 0 \
            else pwrite(fd, p + done[0], n - done[0], offset + done[0])
        if r <= 0:
            if r < 0 and errno == EINTR:
                continue
            return errno if r < 0 else EIO
        done[0] += r
    return 0


cdef class OSAppendFile:
    """An ``lsm.fs.AppendFile`` on an OS descriptor (see the module doc).

    ``OSAppendFile(path, fd, size, step)``: ``fd`` open for writing at
    offset ``size`` (with ``O_APPEND`` when ``step`` is 0); the file owns it."""

    def __init__(self, path, int fd, long long size, long long step=0):
        if fd < 0 or size < 0 or step < 0:
            raise ValueError(f"OSAppendFile needs fd, size, step >= 0, got {fd}, {size}, {step}")
        self.path = path
        self._fd = fd
        self.size = size
        self._end = size
        self._step_max = (step + _PAGE - 1) // _PAGE * _PAGE if step else 0
        self._step = self._step_max if self._step_max < _FIRST_STEP else _FIRST_STEP
        self._map = NULL
        self._map_off = self._map_len = 0
        self._map_ok = step > 0

    def __dealloc__(self):
        if self._map != NULL:
            munmap(self._map, <size_t>self._map_len)
        if self._fd >= 0:
            c_close(self._fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def append(self, data) -> None:
        """Hand every byte of ``data`` (bytes-like) to the OS."""
        cdef Py_buffer buf
        if type(data) is bytes:
            self.write(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
            return
        PyObject_GetBuffer(data, &buf, PyBUF_SIMPLE)
        try:
            self.write(<const char*>buf.buf, buf.len)
        finally:
            PyBuffer_Release(&buf)

    cdef int write(self, const char* p, Py_ssize_t n) except -1:
        """``append`` of ``n`` bytes at ``p``: the C entry point."""
        cdef long long want = self.size + n
        if n == 0:
            if self._fd < 0:
                raise ClosedError(f"append to closed file {self.path!r}")
            return 0
        if want <= self._map_off + self._map_len and self._map != NULL:
            memcpy(self._map + (self.size - self._map_off), p, n)
            self.size = want
            return 0
        if self._fd < 0:
            raise ClosedError(f"append to closed file {self.path!r}")
        if self._step == 0:
            self._write_all(p, n, -1)
            return 0
        if self._map_ok and n >= _DIRECT:   # written once, not over zeros (see the module doc)
            self._write_all(p, n, self.size)
            if self._end < self.size:
                self._end = self.size           # any zeros ahead start from here
            return 0
        if self._map_ok and n <= self._step_max:
            self._zero_fill(self.size, want)
            if self._remap():
                memcpy(self._map + (self.size - self._map_off), p, n)
                self.size = want
                return 0
        self._write_all(p, n, self.size)
        self._zero_fill(want, want)
        return 0

    cdef int _write_all(self, const char* p, Py_ssize_t n, long long offset) except -1:
        """``write`` (offset < 0) or ``pwrite`` every byte; ``size`` counts
        what reached the file even when a later call fails."""
        cdef Py_ssize_t done = 0
        cdef int err
        if n <= _SMALL:
            err = _write_loop(self._fd, p, n, offset, &done)
        else:
            with nogil:
                err = _write_loop(self._fd, p, n, offset, &done)
        self.size += done               # what reached the file; after an error the tail is unknown
        if err:
            raise _os_error(err, "append", self.path)
        return 0

    cdef int write_nogil(self, const char* p, Py_ssize_t n) noexcept nogil:
        """``write`` for a C caller without the GIL, of a plain file (a
        table being built, lsm._table_builder): 0, or the ``errno`` of a
        failed write (``raise_write_error`` raises what ``write`` would
        have), or -1: not a plain open file, call ``write`` with the GIL."""
        cdef Py_ssize_t done = 0
        cdef int err
        if self._fd < 0 or self._step != 0 or self._map != NULL:
            return -1
        err = _write_loop(self._fd, p, n, -1, &done)
        self.size += done
        return err

    cdef int raise_write_error(self, int err) except -1:
        """Raise the error of a failed ``write_nogil`` (``err``: its return)."""
        raise _os_error(err, "append", self.path)

    cdef int _zero_fill(self, long long start, long long want) except -1:
        """Extend the zeros, ``step`` at a time, until they reach ``want``;
        write them from ``max(start, end)`` on (``start``: where data
        written since ends, so that it is not overwritten)."""
        cdef long long end = self._end, new_end = self._end, pos
        cdef ssize_t r
        cdef size_t k
        cdef char* zeros
        cdef int fd = self._fd, err = 0
        if want <= end:
            return 0
        while new_end < want:
            new_end += self._step
            if self._step < self._step_max:     # 64 KiB, doubling up to step
                self._step = min(2 * self._step, self._step_max)
        pos = end if end > start else start
        zeros = <char*>malloc(_ZERO_CHUNK)
        if zeros == NULL:
            raise MemoryError()
        memset(zeros, 0, _ZERO_CHUNK)
        with nogil:
            while pos < new_end:
                k = <size_t>(new_end - pos if new_end - pos < _ZERO_CHUNK else _ZERO_CHUNK)
                r = pwrite(fd, zeros, k, pos)
                if r < 0 and errno == EINTR:
                    continue
                if r <= 0:
                    err = errno if r < 0 else EIO
                    break
                pos += r
        free(zeros)
        if pos > self._end:
            self._end = pos
        if err:
            raise _os_error(err, "zero-fill", self.path)
        return 0

    cdef bint _remap(self):
        """Map ``[page of size, end)``; False (and no more mapping) if the OS refuses."""
        cdef long long start = self.size // _PAGE * _PAGE
        cdef void* m
        if self._map != NULL:
            munmap(self._map, <size_t>self._map_len)
            self._map = NULL
            self._map_off = self._map_len = 0
        m = mmap(NULL, <size_t>(self._end - start), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_POPULATE, self._fd, start)
        if m == MAP_FAILED:
            self._map_ok = False
            return False
        self._map = <char*>m
        self._map_off = start
        self._map_len = self._end - start
        return True

    def sync(self) -> None:
        """``fdatasync``: every byte appended survives power loss.  The first
        one ends the mapping (see the module doc)."""
        cdef int r, fd = self._fd
        if fd < 0:
            raise ClosedError(f"sync of closed file {self.path!r}")
        if self._map_ok:
            self._map_ok = False
            if self._map != NULL:
                munmap(self._map, <size_t>self._map_len)
                self._map = NULL
                self._map_off = self._map_len = 0
        with nogil:
            r = fdatasync(fd)
        if r != 0:
            raise _os_error(errno, "fsync", self.path)

    def close(self) -> None:
        """Unmap, trim the zeros ahead of the end and close (idempotent)."""
        cdef int fd = self._fd, err = 0
        if fd < 0:
            return
        if self._map != NULL:
            munmap(self._map, <size_t>self._map_len)
            self._map = NULL
            self._map_off = self._map_len = 0
        self._fd = -1
        if self._end > self.size:
            if ftruncate(fd, self.size) != 0:
                err = errno
            else:
                self._end = self.size
        if c_close(fd) != 0 and not err:
            raise _os_error(errno, "close", self.path)
        if err:
            raise _os_error(err, "trim", self.path)
