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

The hash is computed here in C (the public MurmurHash3 algorithm) so that a
probe or a build costs no Python call; tests/test_block.py checks that it
agrees with the ``mmh3`` package, which defines the format.

Thread-safety: pure functions over immutable bytes.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t
from libc.string cimport memset
from libc.math cimport log, lround

from lsm._coding cimport decode_fixed64


cdef uint64_t _C1 = 0x87c37b91114253d5ULL
cdef uint64_t _C2 = 0x4cf5ad432745937fULL


cdef inline uint64_t _rotl(uint64_t x, int r) noexcept nogil:
    return (x << r) | (x >> (64 - r))


cdef inline uint64_t _fmix(uint64_t k) noexcept nogil:
    k ^= k >> 33
    k *= 0xff51afd7ed558ccdULL
    k ^= k >> 33
    k *= 0xc4ceb9fe1a85ec53ULL
    k ^= k >> 33
    return k


cdef void murmur3_x64_128(const unsigned char* data, Py_ssize_t n, uint64_t seed,
                          uint64_t* out1, uint64_t* out2) noexcept nogil:
    cdef uint64_t h1 = seed, h2 = seed, k1, k2
    cdef Py_ssize_t nblocks = n // 16, i
    cdef int rem = n & 15, j
    cdef const unsigned char* tail = data + nblocks * 16
    for i in range(nblocks):
        k1 = decode_fixed64(data + 16 * i)
        k2 = decode_fixed64(data + 16 * i + 8)
        k1 *= _C1
        k1 = _rotl(k1, 31)
        k1 *= _C2
        h1 ^= k1
        h1 = _rotl(h1, 27)
        h1 += h2
        h1 = h1 * 5 + 0x52dce729
        k2 *= _C2
        k2 = _rotl(k2, 33)
        k2 *= _C1
        h2 ^= k2
        h2 = _rotl(h2, 31)
        h2 += h1
        h2 = h2 * 5 + 0x38495ab5
    k1 = 0
    k2 = 0
    if rem > 8:
        for j in range(rem - 1, 7, -1):
            k2 ^= (<uint64_t>tail[j]) << ((j - 8) * 8)
        k2 *= _C2
        k2 = _rotl(k2, 33)
        k2 *= _C1
        h2 ^= k2
    if rem > 0:
        for j in range((rem if rem < 8 else 8) - 1, -1, -1):
            k1 ^= (<uint64_t>tail[j]) << (j * 8)
        k1 *= _C1
        k1 = _rotl(k1, 31)
        k1 *= _C2
        h1 ^= k1
    h1 ^= <uint64_t>n
    h2 ^= <uint64_t>n
    h1 += h2
    h2 += h1
    h1 = _fmix(h1)
    h2 = _fmix(h2)
    h1 += h2
    h2 += h1
    out1[0] = h1
    out2[0] = h2


cdef inline void _put_fixed64(unsigned char* p, uint64_t v) noexcept nogil:
    cdef int i
    for i in range(8):
        p[i] = <unsigned char>(v >> (8 * i))

#: Largest number of probes a filter may declare.
MAX_PROBES = 30


def num_probes(int bits_per_key):
    """k for ``bits_per_key``: round(bits_per_key * ln 2) clamped to 1..30."""
    cdef long k = lround(bits_per_key * log(2.0))
    return 1 if k < 1 else (MAX_PROBES if k > MAX_PROBES else k)


def key_digest(bytes user_key not None):
    """The 16-byte hash of a user key the filter is built from (h1 ‖ h2,
    little-endian): equal to ``mmh3.mmh3_x64_128_digest(user_key, 0)``."""
    cdef uint64_t h1, h2
    cdef unsigned char out[16]
    murmur3_x64_128(<const unsigned char*>PyBytes_AS_STRING(user_key),
                    PyBytes_GET_SIZE(user_key), 0, &h1, &h2)
    _put_fixed64(out, h1)
    _put_fixed64(out + 8, h2)
    return PyBytes_FromStringAndSize(<char*>out, 16)


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
    return probe(<const unsigned char*>PyBytes_AS_STRING(filt), PyBytes_GET_SIZE(filt),
                 <const unsigned char*>PyBytes_AS_STRING(user_key), PyBytes_GET_SIZE(user_key))


cdef bint probe(const unsigned char* bits, Py_ssize_t size,
                const unsigned char* key, Py_ssize_t kn) noexcept nogil:
    """may_contain on raw pointers (for the point-read path in _table.pyx)."""
    cdef Py_ssize_t m = size - 1
    cdef uint64_t h1, h2, h, nbits
    cdef int k, j
    if m < 1:
        return True
    k = bits[m]
    if k < 1 or k > 30:
        return True
    murmur3_x64_128(key, kn, 0, &h1, &h2)
    nbits = <uint64_t>m * 8
    for j in range(k):
        h = (h1 + <uint64_t>j * h2) % nbits
        if not (bits[h >> 3] & (1 << (h & 7))):
            return False
    return True
