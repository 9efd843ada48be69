# Internal keys for Cython code: the one C owner of their layout, the twin
# of lsm/dbformat.py (the Python owner); tests/test_dbformat.py checks that the
# two agree (through lsm._twins).
#
#   internal_key := user_key tag:fixed64le
#   tag          := (sequence << 8) | kind,   kind 0 deletion | 1 value
#
# Order: user key ascending (memcmp, shorter first on a common prefix),
# then tag descending.  Every helper taking an internal key assumes it holds
# the 8-byte tag (callers check lengths where bytes come from disk).
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from libc.string cimport memcmp, memcpy
from libc.stdint cimport uint64_t
from lsm._coding cimport decode_fixed64, encode_fixed64

cdef enum:
    KIND_DELETE = 0                  # never renumber: written to disk
    KIND_VALUE = 1                   # never renumber: written to disk
    TAG_SIZE = 8

cdef extern from *:
    """
    #define LSM_MAX_SEQ ((uint64_t)0x00FFFFFFFFFFFFFFULL)
    #define LSM_TAG_FIRST ((uint64_t)0xFFFFFFFFFFFFFFFFULL)
    """
    # Sequence numbers fit in 56 bits, so that a tag fits in 64.
    const uint64_t MAX_SEQ "LSM_MAX_SEQ"
    # A tag above every real one: user_key + TAG_FIRST sorts before every
    # entry of user_key (a seek to its first entry).
    const uint64_t TAG_FIRST "LSM_TAG_FIRST"


cdef inline uint64_t pack_tag(uint64_t seq, int kind) noexcept nogil:
    return (seq << 8) | <uint64_t>kind


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


cdef inline int cmp_ikeys(bytes a, bytes b) noexcept:
    """cmp_ikey of two bytes objects."""
    return cmp_ikey(<const unsigned char*>PyBytes_AS_STRING(a), PyBytes_GET_SIZE(a),
                    <const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))


cdef inline int cmp_user_of(bytes ikey, bytes ukey) noexcept:
    """Compare the user part of an internal key with a user key."""
    return cmp_user(<const unsigned char*>PyBytes_AS_STRING(ikey), PyBytes_GET_SIZE(ikey) - 8,
                    <const unsigned char*>PyBytes_AS_STRING(ukey), PyBytes_GET_SIZE(ukey))


cdef inline Py_ssize_t bisect_keys(list keys, const unsigned char* t, Py_ssize_t tn,
                                   bint internal):
    """bisect_left of ``t[:tn]`` in a sorted list of keys (bytes), compared in
    C: as internal keys (cmp_ikey) when ``internal``, else as user keys."""
    cdef Py_ssize_t lo = 0, hi = len(keys), mid
    cdef bytes k
    cdef int c
    while lo < hi:
        mid = (lo + hi) >> 1
        k = <bytes>keys[mid]
        if internal:
            c = cmp_ikey(<const unsigned char*>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k), t, tn)
        else:
            c = cmp_user(<const unsigned char*>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k), t, tn)
        if c < 0:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline Py_ssize_t lower_bound(list keys, bytes target):
    """bisect_left of user key ``target`` in a sorted list of user keys."""
    return bisect_keys(keys, <const unsigned char*>PyBytes_AS_STRING(target),
                       PyBytes_GET_SIZE(target), False)


cdef inline uint64_t tag_at(const unsigned char* ikey, Py_ssize_t n) noexcept nogil:
    """The tag of the internal key ikey[0:n]."""
    return decode_fixed64(ikey + n - 8)


cdef inline uint64_t tag_of(bytes ikey) noexcept:
    return tag_at(<const unsigned char*>PyBytes_AS_STRING(ikey), PyBytes_GET_SIZE(ikey))


cdef inline bytes user_of(bytes ikey):
    """The user key of an internal key (a copy without the 8-byte tag)."""
    return PyBytes_FromStringAndSize(PyBytes_AS_STRING(ikey), PyBytes_GET_SIZE(ikey) - 8)


cdef inline bytes make_ikey(const char* user, Py_ssize_t n, uint64_t tag):
    """user[0:n] + fixed64le(tag), built in one allocation."""
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n + 8)
    cdef char* p = PyBytes_AS_STRING(out)
    memcpy(p, user, n)
    encode_fixed64(<unsigned char*>p + n, tag)
    return out


cdef inline bytes ikey_of(bytes user, uint64_t tag):
    """``user + fixed64le(tag)``."""
    return make_ikey(PyBytes_AS_STRING(user), PyBytes_GET_SIZE(user), tag)


cdef inline bytes lookup_ikey(bytes user, uint64_t seq):
    """The internal key that sorts before every entry of ``user`` visible at
    ``seq`` (lsm.dbformat.lookup_key)."""
    return make_ikey(PyBytes_AS_STRING(user), PyBytes_GET_SIZE(user), pack_tag(seq, KIND_VALUE))
