/* CRC-32 of a whole buffer. zlib 1.2.13's crc32 costs ~3.3 instructions a
 * byte, 67 k per 20 KB registration body (BENCHMARKS.md); on x86-64 with
 * PCLMULQDQ the buffer is folded 64 bytes a round with carry-less multiplies
 * instead, and zlib finishes the folded value and the last 0-31 bytes.
 *
 * Why that is exact. With a reflected CRC, byte 0 bit 0 is the message
 * polynomial's highest coefficient, and the register's initial ~0 is the same
 * as XOR-ing ~0 into the first four bytes and starting from 0. CRC(M) from 0
 * is M(x) * x^32 mod P, so any string congruent to M modulo P has the same
 * CRC from 0 (zlib's crc32 with crc ~0 starts from 0 and returns the final
 * XOR). Folding keeps a 16-byte value congruent to the bytes so far: a block
 * X = Xh * x^64 + Xl moved D bits further is Xh * x^(64+D) + Xl * x^D. The
 * little-endian low 64 bits of X are Xh with bit i the coefficient of
 * x^(63-i); a carry-less multiply of two such operands is their product times
 * x in the 128-bit form, so the constants are x^(64+D-1) and x^(D-1) mod P in
 * that form (FOLD_* below, checked against zlib by tests/unit/test_crc32.c). */
#include "raftns/crc32.h"

#include <string.h>
#include <zlib.h>

uint32_t ns_crc32_zlib(const uint8_t *p, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt chunk = n > (1u << 30) ? 1u << 30 : (uInt)n;
        c = crc32(c, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* x^e mod P, reflected into the top half of a 64-bit lane. */
#define FOLD_512_HI 0x653d982200000000ull /* e = 575 */
#define FOLD_512_LO 0xcad38e8f00000000ull /* e = 511 */
#define FOLD_128_HI 0x65673b4600000000ull /* e = 191 */
#define FOLD_128_LO 0x9ba54c6f00000000ull /* e = 127 */

__attribute__((target("pclmul,sse2"))) static __m128i fold(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                         _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("pclmul,sse2"))) static uint32_t
crc32_clmul(const uint8_t *p, size_t n)
{
    const __m128i k512 =
        _mm_set_epi64x((long long)FOLD_512_LO, (long long)FOLD_512_HI);
    const __m128i k128 =
        _mm_set_epi64x((long long)FOLD_128_LO, (long long)FOLD_128_HI);
    __m128i x0 = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128(-1)); /* the initial ~0 */
    p += 64;
    n -= 64;
    while (n >= 64) {
        x0 = _mm_xor_si128(fold(x0, k512), _mm_loadu_si128((const void *)p));
        x1 = _mm_xor_si128(fold(x1, k512),
                           _mm_loadu_si128((const void *)(p + 16)));
        x2 = _mm_xor_si128(fold(x2, k512),
                           _mm_loadu_si128((const void *)(p + 32)));
        x3 = _mm_xor_si128(fold(x3, k512),
                           _mm_loadu_si128((const void *)(p + 48)));
        p += 64;
        n -= 64;
    }
    __m128i x = _mm_xor_si128(fold(x0, k128), x1);
    x = _mm_xor_si128(fold(x, k128), x2);
    x = _mm_xor_si128(fold(x, k128), x3);
    while (n >= 16 + 16) {
        x = _mm_xor_si128(fold(x, k128), _mm_loadu_si128((const void *)p));
        p += 16;
        n -= 16;
    }
    uint8_t last[16 + 31];
    _mm_storeu_si128((__m128i *)(void *)last, x);
    memcpy(last + 16, p, n);
    return (uint32_t)crc32(0xFFFFFFFFul, last, (uInt)(16 + n));
}

uint32_t ns_crc32(const uint8_t *p, size_t n)
{
    if (n >= 64 && __builtin_cpu_supports("pclmul")) {
        return crc32_clmul(p, n);
    }
    return ns_crc32_zlib(p, n);
}
#else
uint32_t ns_crc32(const uint8_t *p, size_t n)
{
    return ns_crc32_zlib(p, n);
}
#endif
