/* zlib's CRC-32 (the reflected IEEE polynomial 0x04C11DB7) of long buffers,
 * by carry-less multiplication (PCLMULQDQ), declared for Cython in _crc32.pxd
 * (lsm._crc32 gives it to Python; lsm._log_writer and lsm._mapped_blocks checksum with it).
 *
 * lsm_crc32(crc, p, n) returns what zlib's crc32(crc, p, n) returns.  A
 * buffer of LSM_CRC_FOLD_MIN bytes or more, on a CPU with PCLMULQDQ, is
 * folded: four 16-byte accumulators (the first 64 bytes, the incoming CRC
 * register xored into the first 4) are each multiplied by x^544 and x^480
 * mod P (their low and high 64-bit halves) and xored with the next 64
 * bytes, until fewer than 64 remain; the four are folded into one (x^160,
 * x^96: one 16-byte step), as is each further whole 16 bytes.  What is left
 * is 16 bytes congruent to everything folded, modulo P, at the same
 * position, so zlib's CRC of those 16 bytes with a zero register, then of
 * the tail, is the CRC of the whole (the fold keeps the congruence, and a
 * CRC is a remainder modulo P).  The constants are x^e mod P bit-reflected
 * and shifted left by one, as a reflected carry-less product needs;
 * tests/test_record.py recomputes them and checks the function against
 * zlib on every length up to 300 and on random buffers and offsets.
 * Shorter buffers, and CPUs without the instruction, go to zlib.
 */
#ifndef LSM_CRC32_FOLD_H
#define LSM_CRC32_FOLD_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#define LSM_CRC_FOLD_MIN 128

#define LSM_K544 0x154442bd4ULL
#define LSM_K480 0x1c6e41596ULL
#define LSM_K160 0x1751997d0ULL
#define LSM_K96  0x0ccaa009eULL

static uint32_t lsm_crc32_zlib(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n > 0) {              /* zlib's length is an unsigned int */
        unsigned int step = n > 0x40000000u ? 0x40000000u : (unsigned int)n;
        crc = (uint32_t)crc32(crc, p, step);
        p += step;
        n -= step;
    }
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("pclmul,sse2")))
static inline __m128i lsm_fold16(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("pclmul,sse2")))
static uint32_t lsm_crc32_fold(uint32_t crc, const unsigned char *p, size_t n)
{
    const __m128i k4 = _mm_set_epi64x((long long)LSM_K480, (long long)LSM_K544);
    const __m128i k1 = _mm_set_epi64x((long long)LSM_K96, (long long)LSM_K160);
    __m128i x0 = _mm_loadu_si128((const __m128i *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    unsigned char last[16];
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)~crc));
    p += 64;
    n -= 64;
    while (n >= 64) {
        x0 = _mm_xor_si128(lsm_fold16(x0, k4), _mm_loadu_si128((const __m128i *)p));
        x1 = _mm_xor_si128(lsm_fold16(x1, k4), _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = _mm_xor_si128(lsm_fold16(x2, k4), _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = _mm_xor_si128(lsm_fold16(x3, k4), _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    x0 = _mm_xor_si128(lsm_fold16(x0, k1), x1);
    x0 = _mm_xor_si128(lsm_fold16(x0, k1), x2);
    x0 = _mm_xor_si128(lsm_fold16(x0, k1), x3);
    while (n >= 16) {
        x0 = _mm_xor_si128(lsm_fold16(x0, k1), _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    _mm_storeu_si128((__m128i *)last, x0);
    crc = (uint32_t)crc32(0xffffffffUL, last, 16);   /* a zero register */
    return lsm_crc32_zlib(crc, p, n);
}

static int lsm_crc_has_pclmul = -1;

static inline int lsm_crc_can_fold(void)
{
    if (lsm_crc_has_pclmul < 0) {
        __builtin_cpu_init();
        lsm_crc_has_pclmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
    }
    return lsm_crc_has_pclmul;
}
#endif

/* The CRC of p[0:n] continuing crc, as zlib's crc32(crc, p, n).  force: 1
 * folds whenever it can (n >= 64), 0 goes to zlib (for the tests), -1
 * chooses by length. */
static uint32_t lsm_crc32_with(uint32_t crc, const unsigned char *p, size_t n, int force)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (force != 0 && n >= (force > 0 ? 64 : LSM_CRC_FOLD_MIN) && lsm_crc_can_fold())
        return lsm_crc32_fold(crc, p, n);
#endif
    return lsm_crc32_zlib(crc, p, n);
}

static inline uint32_t lsm_crc32(uint32_t crc, const unsigned char *p, size_t n)
{
    return lsm_crc32_with(crc, p, n, -1);
}

#endif
