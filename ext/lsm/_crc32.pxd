# zlib's CRC-32, folded with PCLMULQDQ over long buffers (crc32_fold.h), for
# the engine's C code that checksums (the log writer, lsm._log_writer; a mapped
# table's blocks, lsm._mapped_blocks); lsm._crc32 gives it to Python (lsm/crc.py).
# The same values as zlib.crc32.
from libc.stdint cimport uint32_t

cdef extern from "crc32_fold.h":
    uint32_t lsm_crc32(uint32_t crc, const unsigned char *p, size_t n) nogil
    uint32_t lsm_crc32_with(uint32_t crc, const unsigned char *p, size_t n, int force) nogil
    unsigned long long LSM_K544, LSM_K480, LSM_K160, LSM_K96
    int LSM_CRC_FOLD_MIN
