# A growable output buffer for the C encoders of the regions package
# (regions.tablestore._rowcodec, _cellcodec, _reads, _writes;
# regions.otsserver._plainbuffer): one definition, inline, so no extension
# module backs it.  The owner frees ``p``.
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy


cdef struct Buf:
    unsigned char* p
    Py_ssize_t n
    Py_ssize_t cap


cdef inline int buf_reserve(Buf* b, Py_ssize_t extra) except -1:
    """Room for ``extra`` more bytes (doubling from 256)."""
    cdef Py_ssize_t cap
    cdef unsigned char* p
    if b.n + extra <= b.cap:
        return 0
    cap = b.cap * 2 if b.cap else 256
    while cap < b.n + extra:
        cap *= 2
    p = <unsigned char*>realloc(b.p, cap)
    if p == NULL:
        raise MemoryError()
    b.p = p
    b.cap = cap
    return 0


cdef inline int buf_put(Buf* b, const void* src, Py_ssize_t n) except -1:
    buf_reserve(b, n)
    memcpy(b.p + b.n, src, n)
    b.n += n
    return 0


cdef inline int buf_put_byte(Buf* b, unsigned char c) except -1:
    buf_reserve(b, 1)
    b.p[b.n] = c
    b.n += 1
    return 0


cdef inline int buf_put_le(Buf* b, uint64_t v, int width) except -1:
    """``v`` as ``width`` little-endian bytes."""
    cdef int i
    buf_reserve(b, width)
    for i in range(width):
        b.p[b.n + i] = (v >> (8 * i)) & 0xff
    b.n += width
    return 0


cdef inline int buf_put_be64(Buf* b, uint64_t v) except -1:
    """``v`` as 8 big-endian bytes."""
    cdef int i
    buf_reserve(b, 8)
    for i in range(8):
        b.p[b.n + i] = (v >> (56 - 8 * i)) & 0xff
    b.n += 8
    return 0


cdef inline bytes buf_take(Buf* b):
    """The buffer's bytes; the buffer is freed."""
    try:
        return PyBytes_FromStringAndSize(<char*>b.p, b.n)
    finally:
        free(b.p)
        b.p = NULL
