# Internal-key comparison for Cython code: the twin of lsm/dbformat.py.
# internal_key := user_key tag:fixed64le, tag = seq << 8 | kind.
# Order: user key ascending (memcmp, shorter first on a common prefix),
# then tag descending.
from libc.string cimport memcmp
from libc.stdint cimport uint64_t

cdef inline uint64_t decode_fixed64(const unsigned char* p) noexcept nogil:
    return (<uint64_t>p[0] | (<uint64_t>p[1] << 8) | (<uint64_t>p[2] << 16) |
            (<uint64_t>p[3] << 24) | (<uint64_t>p[4] << 32) | (<uint64_t>p[5] << 40) |
            (<uint64_t>p[6] << 48) | (<uint64_t>p[7] << 56))

cdef inline int cmp_user(const unsigned char* a, Py_ssize_t an,
                         const unsigned char* b, Py_ssize_t bn) noexcept nogil:
    cdef Py_ssize_t n = an if an < bn else bn
    cdef int r = memcmp(a, b, n) if n > 0 else 0
    if r != 0:
        return r
    return (an > bn) - (an < bn)

cdef inline int cmp_ikey(const unsigned char* a, Py_ssize_t an,
                         const unsigned char* b, Py_ssize_t bn) noexcept nogil:
    # Both keys carry an 8-byte tag; callers guarantee an, bn >= 8.
    cdef int r = cmp_user(a, an - 8, b, bn - 8)
    if r != 0:
        return r
    cdef uint64_t ta = decode_fixed64(a + an - 8)
    cdef uint64_t tb = decode_fixed64(b + bn - 8)
    return (ta < tb) - (ta > tb)
