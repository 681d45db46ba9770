/* Unit tests of the body CRC (include/raftns/crc32.h, src/route/crc32.c): the
 * folding path must give zlib's CRC for every length and alignment around its
 * block sizes, on data where each byte matters, and the known check value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/crc32.h"

static void check_value(void **state)
{
    (void)state;
    assert_int_equal(ns_crc32((const uint8_t *)"123456789", 9), 0xCBF43926u);
    assert_int_equal(ns_crc32(NULL, 0), 0);
    uint8_t zeros[200] = {0};
    assert_int_equal(ns_crc32(zeros, sizeof zeros),
                     ns_crc32_zlib(zeros, sizeof zeros));
}

/* A pseudo-random buffer (xorshift): no two blocks alike, no zero runs. */
static uint8_t *random_bytes(size_t n, uint64_t seed)
{
    uint8_t *p = malloc(n + 1);
    assert_non_null(p);
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p[i] = (uint8_t)(s >> 24);
    }
    return p;
}

static void every_length_and_offset(void **state)
{
    (void)state;
    uint8_t *buf = random_bytes(1024 + 16, 0x9E3779B97F4A7C15ull);
    for (size_t off = 0; off < 16; off++) {
        for (size_t n = 0; n <= 1024; n++) {
            uint32_t want = ns_crc32_zlib(buf + off, n);
            uint32_t got = ns_crc32(buf + off, n);
            if (got != want) {
                fail_msg("offset %zu length %zu: %08x, zlib %08x", off, n,
                         (unsigned)got, (unsigned)want);
            }
        }
    }
    free(buf);
}

/* One flipped bit anywhere in a body-sized buffer changes the CRC as it
 * changes zlib's: every block position takes part in the fold. */
static void every_bit_position(void **state)
{
    (void)state;
    size_t n = 333;
    uint8_t *buf = random_bytes(n, 7);
    for (size_t i = 0; i < n * 8; i++) {
        buf[i / 8] ^= (uint8_t)(1u << (i % 8));
        uint32_t want = ns_crc32_zlib(buf, n);
        assert_int_equal(ns_crc32(buf, n), want);
        buf[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    free(buf);
}

static void large_body(void **state)
{
    (void)state;
    size_t n = (3u << 20) + 5;
    uint8_t *buf = random_bytes(n, 99);
    assert_int_equal(ns_crc32(buf, n), ns_crc32_zlib(buf, n));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(check_value),
        cmocka_unit_test(every_length_and_offset),
        cmocka_unit_test(every_bit_position),
        cmocka_unit_test(large_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
