/* Unit tests of raftns-bench's request builders (tools/bench_req.c): the
 * register body from pre-rendered topic entries against the printf one byte
 * for byte (pool wrap-around, more topics than the pool), the printf one
 * against golden text, and bench_crc32 against CRC-32's check value and a
 * bitwise CRC. Not a test of the bench's event loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/err.h"

#include "bench.h"

#define TS 1700000000000ull

/* Builds both bodies and checks they are the same bytes, naming the first
 * difference when they are not. */
static void check_same(const struct bench_frags *f, const char *prefix,
                       uint64_t first, uint64_t n, uint64_t counter,
                       uint64_t timestamp)
{
    struct ns_buf ref, fast;
    ns_buf_init(&ref);
    ns_buf_init(&fast);
    assert_int_equal(bench_register_body(&ref, prefix, first, n, f->pool,
                                         counter, timestamp),
                     0);
    assert_int_equal(bench_frags_body(f, &fast, first, n, counter, timestamp),
                     0);
    size_t i = 0;
    while (i < ref.len && i < fast.len && ref.data[i] == fast.data[i])
        i++;
    if (i != ref.len || i != fast.len)
        fail_msg("prefix %s first %llu n %llu pool %llu: %zu vs %zu bytes, "
                 "first difference at %zu",
                 prefix, (unsigned long long)first, (unsigned long long)n,
                 (unsigned long long)f->pool, ref.len, fast.len, i);
    ns_buf_close(&ref);
    ns_buf_close(&fast);
}

/* register_frame's bodies: pool 1000, 100 topics, first = counter, through
 * the wrap-around (first + i >= 1000) and past several pool lengths. */
static void test_frags_register_windows(void **state)
{
    (void)state;
    static const char *const prefixes[] = {"BenchReg0-", "BenchReg63-",
                                           "BenchReg9999-"};
    static const uint64_t counters[] = {1,    2,    99,   100, 899,  900,
                                        901,  950,  998,  999, 1000, 1001,
                                        1899, 1901, 1999, 2000};
    for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
        struct bench_frags f;
        assert_int_equal(bench_frags_init(&f, prefixes[p], 1000), 0);
        for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]); k++)
            check_same(&f, prefixes[p], counters[k], 100, counters[k],
                       TS + counters[k]);
        check_same(&f, prefixes[p], 123456789012, 100, 123456789012,
                   TS + 123456789012);
        bench_frags_close(&f);
    }
}

/* Other --reg-topics: none, one, the whole pool, and more than the pool (the
 * names repeat, as bench_register_body repeats them). */
static void test_frags_topic_counts(void **state)
{
    (void)state;
    static const uint64_t counts[] = {0, 1, 2, 999, 1000, 1001, 2500};
    static const uint64_t firsts[] = {0, 1, 500, 999, 1000, 1999};
    struct bench_frags f;
    assert_int_equal(bench_frags_init(&f, "BenchReg7-", 1000), 0);
    for (size_t n = 0; n < sizeof(counts) / sizeof(counts[0]); n++)
        for (size_t k = 0; k < sizeof(firsts) / sizeof(firsts[0]); k++)
            check_same(&f, "BenchReg7-", firsts[k], counts[n], firsts[k] + 1,
                       TS);
    bench_frags_close(&f);
}

/* Small pools, where every window wraps, and extreme numbers. */
static void test_frags_small_pools(void **state)
{
    (void)state;
    for (uint64_t pool = 1; pool <= 4; pool++) {
        struct bench_frags f;
        assert_int_equal(bench_frags_init(&f, "T", pool), 0);
        for (uint64_t first = 0; first < 9; first++)
            for (uint64_t n = 0; n < 11; n++)
                check_same(&f, "T", first, n, first, TS + n);
        /* The last window before first + i would wrap at 2^64, where
         * bench_register_body's (first + i) % pool jumps. */
        check_same(&f, "T", UINT64_MAX - 5, 5, UINT64_MAX, UINT64_MAX);
        bench_frags_close(&f);
    }
}

/* The body is appended: what out held before stays in front of it. */
static void test_frags_appends(void **state)
{
    (void)state;
    struct bench_frags f;
    struct ns_buf ref, fast;
    assert_int_equal(bench_frags_init(&f, "P", 10), 0);
    ns_buf_init(&ref);
    ns_buf_init(&fast);
    ns_buf_append_str(&ref, "xy");
    ns_buf_append_str(&fast, "xy");
    assert_int_equal(bench_register_body(&ref, "P", 8, 5, 10, 3, TS), 0);
    assert_int_equal(bench_frags_body(&f, &fast, 8, 5, 3, TS), 0);
    assert_int_equal(ref.len, fast.len);
    assert_memory_equal(ref.data, fast.data, ref.len);
    ns_buf_close(&ref);
    ns_buf_close(&fast);
    bench_frags_close(&f);
}

/* bench_register_body itself, pinned: the bytes raftns-bench sends. */
static void test_register_body_golden(void **state)
{
    (void)state;
    static const char want[] =
        "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{"
        "\"dataVersion\":{\"counter\":999,\"stateVersion\":0,"
        "\"timestamp\":1700000000999},\"mappingDataVersion\":{\"counter\":0,"
        "\"stateVersion\":0,\"timestamp\":1700000000999},"
        "\"topicConfigTable\":{"
        "\"BenchReg5-999\":{\"attributes\":{},\"order\":false,\"perm\":6,"
        "\"readQueueNums\":4,\"topicFilterType\":\"SINGLE_TAG\","
        "\"topicName\":\"BenchReg5-999\",\"topicSysFlag\":0,"
        "\"writeQueueNums\":4},"
        "\"BenchReg5-0\":{\"attributes\":{},\"order\":false,\"perm\":6,"
        "\"readQueueNums\":4,\"topicFilterType\":\"SINGLE_TAG\","
        "\"topicName\":\"BenchReg5-0\",\"topicSysFlag\":0,"
        "\"writeQueueNums\":4}"
        "},\"topicQueueMappingDetailMap\":{},\"topicQueueMappingInfoMap\":{}}}";
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(
        bench_register_body(&b, "BenchReg5-", 999, 2, 1000, 999, TS + 999), 0);
    assert_int_equal(b.len, sizeof(want) - 1);
    assert_memory_equal(b.data, want, b.len);
    ns_buf_close(&b);
}

static void test_frags_bad_pool(void **state)
{
    (void)state;
    struct bench_frags f;
    assert_int_equal(bench_frags_init(&f, "P", 0), NS_EINVAL);
    bench_frags_close(&f);
}

/* Every allocation of bench_frags_init failing in turn: NS_ENOMEM and
 * nothing held (close after it is harmless), then success. */
static void test_frags_alloc_failure(void **state)
{
    (void)state;
    for (long k = 0;; k++) {
        struct bench_frags f;
        ns_alloc_fail_at(k, 1);
        int rv = bench_frags_init(&f, "BenchReg1-", 50);
        ns_alloc_fail_at(-1, 0);
        if (rv == 0) {
            check_same(&f, "BenchReg1-", 40, 20, 1, TS);
            bench_frags_close(&f);
            break;
        }
        assert_int_equal(rv, NS_ENOMEM);
        assert_null(f.arena);
        assert_null(f.off);
        bench_frags_close(&f);
        assert_true(k < 100);
    }
}

/* The CRC-32 of the old bytewise table, one bit at a time. */
static uint32_t bitwise_crc32(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

static void test_crc32(void **state)
{
    (void)state;
    assert_int_equal(bench_crc32((const uint8_t *)"123456789", 9), 0xCBF43926u);
    assert_int_equal(bench_crc32((const uint8_t *)"", 0), 0);
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(
        bench_register_body(&b, "BenchReg3-", 950, 100, 1000, 950, TS), 0);
    for (size_t n = 0; n <= b.len; n += n < 64 ? 1 : 997)
        assert_int_equal(bench_crc32(b.data, n), bitwise_crc32(b.data, n));
    assert_int_equal(bench_crc32(b.data, b.len), bitwise_crc32(b.data, b.len));
    ns_buf_close(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frags_register_windows),
        cmocka_unit_test(test_frags_topic_counts),
        cmocka_unit_test(test_frags_small_pools),
        cmocka_unit_test(test_frags_appends),
        cmocka_unit_test(test_register_body_golden),
        cmocka_unit_test(test_frags_bad_pool),
        cmocka_unit_test(test_frags_alloc_failure),
        cmocka_unit_test(test_crc32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
