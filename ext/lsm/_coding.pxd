# Fixed-width integers, varints, block handles and the masked CRC for the C
# code of the engine: LevelDB's util/coding.h and crc32c.h Mask, in one place.
# The Python owners of the same layouts: struct "<I"/"<Q" little-endian,
# lsm.block.encode_varint/decode_varint (compiled from _block.pyx, which
# uses these), lsm/sstable.py decode_handle and lsm/crc.py (mask_crc);
# tests/test_dbformat.py checks the two sides agree.
#
#   fixed32 / fixed64 := little-endian, 4 / 8 bytes
#   varint64          := 7 bits a byte, low groups first, high bit = more
#   block handle      := offset:varint64 size:varint64
#   masked crc        := ((crc >> 15) | (crc << 17)) + MASK_DELTA   (mod 2^32)
from libc.stdint cimport uint32_t, uint64_t

cdef extern from *:
    """
    #define LSM_MASK_DELTA ((uint32_t)0xa282ead8U)
    """
    const uint32_t MASK_DELTA "LSM_MASK_DELTA"   # never change: written to disk


cdef inline uint32_t decode_fixed32(const unsigned char* p) noexcept nogil:
    return (<uint32_t>p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) |
            (<uint32_t>p[3] << 24))


cdef inline uint64_t decode_fixed64(const unsigned char* p) noexcept nogil:
    return (<uint64_t>p[0] | (<uint64_t>p[1] << 8) | (<uint64_t>p[2] << 16) |
            (<uint64_t>p[3] << 24) | (<uint64_t>p[4] << 32) | (<uint64_t>p[5] << 40) |
            (<uint64_t>p[6] << 48) | (<uint64_t>p[7] << 56))


cdef inline void encode_fixed32(unsigned char* p, uint32_t v) noexcept nogil:
    p[0] = v & 0xff; p[1] = (v >> 8) & 0xff; p[2] = (v >> 16) & 0xff; p[3] = (v >> 24) & 0xff


cdef inline void encode_fixed64(unsigned char* p, uint64_t v) noexcept nogil:
    cdef int i
    for i in range(8):
        p[i] = (v >> (8 * i)) & 0xff


cdef inline int get_varint64(const unsigned char* p, Py_ssize_t limit, Py_ssize_t* pos,
                             uint64_t* out) noexcept nogil:
    """Decode a varint at p[pos[0]:limit]; 0 on success, -1 if malformed."""
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef Py_ssize_t i = pos[0]
    cdef unsigned char b
    while shift <= 63 and i < limit:
        b = p[i]
        i += 1
        result |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            pos[0] = i
            out[0] = result
            return 0
        shift += 7
    return -1


cdef inline Py_ssize_t put_varint64(unsigned char* dst, uint64_t v) noexcept nogil:
    """Encode ``v`` at ``dst`` (room for 10 bytes); returns the bytes written."""
    cdef Py_ssize_t n = 0
    while v >= 0x80:
        dst[n] = <unsigned char>(v | 0x80)
        v >>= 7
        n += 1
    dst[n] = <unsigned char>v
    return n + 1


cdef inline int get_block_handle(const unsigned char* p, Py_ssize_t limit, Py_ssize_t* pos,
                                 uint64_t* offset, uint64_t* size) noexcept nogil:
    """Decode a block handle at p[pos[0]:limit]; 0 on success, -1 if malformed."""
    if get_varint64(p, limit, pos, offset) != 0:
        return -1
    return get_varint64(p, limit, pos, size)


cdef inline uint32_t mask_crc(uint32_t crc) noexcept nogil:
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xffffffffU
