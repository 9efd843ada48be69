# cython: language_level=3
"""The table's bloom filter over user keys: building and probing.

Grammar (one filter per table; never change without a new metaindex name)::

    filter   := bits:byte[m] k:uint8          (m >= 8; nbits = 8 * m)
    h1, h2   := the two little-endian uint64 halves of
                MurmurHash3_x64_128(user_key, seed=0)   (mmh3.hash64, unsigned)
    probe i  := bit  (h1 + i * h2) mod 2**64 mod nbits,   for i in 0 .. k-1
    bit b    := byte b >> 3, mask 1 << (b & 7)

k = round(bits_per_key * ln 2) clamped to 1..30, so 10 bits per key gives
k = 7 and about 1% false positives.  A filter whose k is above 30 is a
future format: it answers "may contain" to everything.

Thread-safety: pure functions over immutable bytes.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t
from libc.string cimport memset
from libc.math cimport log, lround

from lsm._keys cimport decode_fixed64

import mmh3

_digest = mmh3.mmh3_x64_128_digest

#: Largest number of probes a filter may declare.
MAX_PROBES = 30


def num_probes(int bits_per_key):
    """k for ``bits_per_key``: round(bits_per_key * ln 2) clamped to 1..30."""
    cdef long k = lround(bits_per_key * log(2.0))
    return 1 if k < 1 else (MAX_PROBES if k > MAX_PROBES else k)


def key_digest(bytes user_key not None):
    """The 16-byte hash of a user key the filter is built from (h1 ‖ h2)."""
    return _digest(user_key, 0)


def build(bytes digests not None, int bits_per_key):
    """A filter over ``digests``: concatenated 16-byte ``key_digest`` values."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(digests) // 16, i
    cdef Py_ssize_t m
    cdef int k, j
    cdef uint64_t h1, h2, h, nbits
    cdef const unsigned char* src = <const unsigned char*>PyBytes_AS_STRING(digests)
    cdef unsigned char* bits
    cdef bytes out
    if bits_per_key < 1:
        raise ValueError(f"bits_per_key must be >= 1, got {bits_per_key}")
    if PyBytes_GET_SIZE(digests) % 16:
        raise ValueError("digests must be a multiple of 16 bytes")
    k = num_probes(bits_per_key)
    m = (n * bits_per_key + 7) // 8
    if m < 8:
        m = 8
    nbits = <uint64_t>m * 8
    out = PyBytes_FromStringAndSize(NULL, m + 1)
    bits = <unsigned char*>PyBytes_AS_STRING(out)
    memset(bits, 0, m)
    with nogil:
        for i in range(n):
            h1 = decode_fixed64(src + 16 * i)
            h2 = decode_fixed64(src + 16 * i + 8)
            for j in range(k):
                h = (h1 + <uint64_t>j * h2) % nbits
                bits[h >> 3] |= <unsigned char>(1 << (h & 7))
    bits[m] = <unsigned char>k
    return out


def may_contain(bytes filt not None, bytes user_key not None):
    """False only if ``user_key`` was certainly not added to ``filt``."""
    cdef Py_ssize_t m = PyBytes_GET_SIZE(filt) - 1
    cdef const unsigned char* bits = <const unsigned char*>PyBytes_AS_STRING(filt)
    cdef bytes d
    cdef const unsigned char* dp
    cdef uint64_t h1, h2, h, nbits
    cdef int k, j
    if m < 1:
        return True
    k = bits[m]
    if k < 1 or k > MAX_PROBES:
        return True
    d = _digest(user_key, 0)
    dp = <const unsigned char*>PyBytes_AS_STRING(d)
    h1 = decode_fixed64(dp)
    h2 = decode_fixed64(dp + 8)
    nbits = <uint64_t>m * 8
    for j in range(k):
        h = (h1 + <uint64_t>j * h2) % nbits
        if not (bits[h >> 3] & (1 << (h & 7))):
            return False
    return True
