# MurmurHash3_x64_128, the hash of the bloom filter (grammar in _bloom.pyx),
# shared with _table_builder.pyx so the builder hashes keys without a Python call.
from libc.stdint cimport uint64_t

cdef void murmur3_x64_128(const unsigned char* data, Py_ssize_t n, uint64_t seed,
                          uint64_t* out1, uint64_t* out2) noexcept nogil

cdef bint probe(const unsigned char* bits, Py_ssize_t size,
                const unsigned char* key, Py_ssize_t kn) noexcept nogil
