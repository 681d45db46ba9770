/* Unit tests of the request-id table (raft/reqid.c): the verdicts NEW,
 * DUPLICATE and STALE through the window, run changes, out-of-order records,
 * eviction of the least recent origin, the encoding (layout, round trip,
 * refusals) and allocation failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/reqid.h"

static struct ns_reqid id(uint64_t origin, uint64_t run, uint64_t seq)
{
    struct ns_reqid r = {origin, run, seq};
    return r;
}

static enum ns_reqid_verdict check(const struct ns_reqid_table *t,
                                   uint64_t origin, uint64_t run, uint64_t seq)
{
    struct ns_reqid r = id(origin, run, seq);
    return ns_reqid_check(t, &r);
}

static void record(struct ns_reqid_table *t, uint64_t origin, uint64_t run,
                   uint64_t seq, int64_t time_ms)
{
    struct ns_reqid r = id(origin, run, seq);
    assert_int_equal(ns_reqid_check(t, &r), NS_REQID_NEW);
    assert_int_equal(ns_reqid_record(t, &r, time_ms), 0);
    assert_int_equal(ns_reqid_check(t, &r), NS_REQID_DUPLICATE);
}

static void test_window(void **state)
{
    (void)state;
    struct ns_reqid_table t = {0};
    assert_int_equal(check(&t, 2, 10, 1), NS_REQID_NEW);
    assert_int_equal(check(&t, 2, 10, 0), NS_REQID_STALE); /* never sent */
    record(&t, 2, 10, 5, 100);
    /* below the highest, not recorded: still NEW (out of order) */
    assert_int_equal(check(&t, 2, 10, 3), NS_REQID_NEW);
    record(&t, 2, 10, 3, 101);
    record(&t, 2, 10, 7, 102);
    assert_int_equal(check(&t, 2, 10, 5), NS_REQID_DUPLICATE);
    assert_int_equal(check(&t, 2, 10, 4), NS_REQID_NEW);
    assert_int_equal(check(&t, 2, 10, 6), NS_REQID_NEW);
    /* the window slides with the highest seq */
    record(&t, 2, 10, 7 + NS_REQID_WINDOW - 1, 103);
    assert_int_equal(check(&t, 2, 10, 7), NS_REQID_DUPLICATE);
    assert_int_equal(check(&t, 2, 10, 6), NS_REQID_STALE);
    assert_int_equal(check(&t, 2, 10, 5), NS_REQID_STALE);
    record(&t, 2, 10, 7 + NS_REQID_WINDOW, 104);
    assert_int_equal(check(&t, 2, 10, 7), NS_REQID_STALE);
    assert_int_equal(check(&t, 2, 10, 8), NS_REQID_NEW);
    /* a jump of more than the window forgets everything below it */
    record(&t, 2, 10, 100000, 105);
    assert_int_equal(check(&t, 2, 10, 7 + NS_REQID_WINDOW), NS_REQID_STALE);
    assert_int_equal(check(&t, 2, 10, 100000 - 1), NS_REQID_NEW);
    /* shifts that are not a multiple of 64 keep every recorded bit */
    for (uint64_t s = 100001; s < 100400; s += 37) {
        record(&t, 2, 10, s, 106);
    }
    for (uint64_t s = 100001; s < 100400; s += 37) {
        assert_int_equal(check(&t, 2, 10, s), NS_REQID_DUPLICATE);
        assert_int_equal(check(&t, 2, 10, s + 1), NS_REQID_NEW);
    }
    /* recording a stale id changes nothing (and writes no bit out of range) */
    struct ns_reqid far = id(2, 10, 1), old_run = id(2, 9, 100001);
    assert_int_equal(ns_reqid_record(&t, &far, 107), 0);
    assert_int_equal(ns_reqid_record(&t, &old_run, 107), 0);
    assert_int_equal(check(&t, 2, 10, 100000), NS_REQID_DUPLICATE);
    assert_int_equal(ns_reqid_find(&t, 2)->run, 10);
    assert_int_equal(ns_reqid_find(&t, 2)->high, 100371); /* the last seq */
    /* other origins are independent */
    assert_int_equal(check(&t, 3, 10, 100000), NS_REQID_NEW);
    ns_reqid_table_close(&t);
}

static void test_runs(void **state)
{
    (void)state;
    struct ns_reqid_table t = {0};
    record(&t, 2, 10, 40, 100);
    /* a later run (the node restarted) starts over; an earlier run is a copy
     * from a process that is gone */
    assert_int_equal(check(&t, 2, 11, 1), NS_REQID_NEW);
    assert_int_equal(check(&t, 2, 9, 1), NS_REQID_STALE);
    record(&t, 2, 11, 1, 101);
    assert_int_equal(check(&t, 2, 10, 40), NS_REQID_STALE);
    assert_int_equal(check(&t, 2, 11, 40), NS_REQID_NEW);
    const struct ns_reqid_origin *o = ns_reqid_find(&t, 2);
    assert_non_null(o);
    assert_true(o->run == 11 && o->high == 1);
    assert_null(ns_reqid_find(&t, 3));
    ns_reqid_table_close(&t);
}

static void test_eviction(void **state)
{
    (void)state;
    struct ns_reqid_table t = {0};
    for (uint64_t o = 1; o <= NS_REQID_MAX_ORIGINS; o++) {
        /* origin 7 is the least recent */
        record(&t, o, 1, 1, o == 7 ? 5 : 1000 + (int64_t)o);
    }
    assert_int_equal(t.n, NS_REQID_MAX_ORIGINS);
    record(&t, 1000, 1, 1, 5000);
    assert_int_equal(t.n, NS_REQID_MAX_ORIGINS);
    assert_null(ns_reqid_find(&t, 7));
    assert_int_equal(check(&t, 7, 1, 1), NS_REQID_NEW);
    assert_int_equal(check(&t, 8, 1, 1), NS_REQID_DUPLICATE);
    for (size_t i = 1; i < t.n; i++) {
        assert_true(t.items[i - 1].origin < t.items[i].origin);
    }
    ns_reqid_table_close(&t);
}

static void test_encoding(void **state)
{
    (void)state;
    struct ns_reqid_table t = {0};
    record(&t, 5, 0x0102030405060708ULL, 3, 77);
    record(&t, 5, 0x0102030405060708ULL, 1, 77);
    record(&t, 2, 9, 70, 78);
    struct ns_buf b;
    ns_buf_init(&b);
    ns_reqid_encode_state(&t, &b);
    size_t each = 8 * (4 + NS_REQID_WINDOW / 64);
    assert_int_equal(b.len, 4 + 2 * each);
    /* u32 n, then origin 2 first (sorted): origin, run, high, time, bits */
    static const uint8_t head[] = {
        0, 0, 0, 2, 0, 0,  0, 0, 0, 0, 0, 2, 0, 0,  0, 0, 0, 0, 0, 9, 0, 0,
        0, 0, 0, 0, 0, 70, 0, 0, 0, 0, 0, 0, 0, 78, 0, 0, 0, 0, 0, 0, 0, 1};
    assert_memory_equal(b.data, head, sizeof head);
    /* origin 5: high 3, bits 0b101 (seq 3 and seq 1) */
    const uint8_t *o5 = b.data + 4 + each;
    assert_int_equal(o5[7], 5);
    assert_int_equal(o5[8 * 3 - 1], 3);
    assert_int_equal(o5[8 * 5 - 1], 5);

    struct ns_reqid_table back = {0};
    struct ns_rd rd;
    ns_rd_init(&rd, b.data, b.len);
    assert_int_equal(ns_reqid_decode_state(&back, &rd), 0);
    assert_int_equal(ns_rd_left(&rd), 0);
    assert_int_equal(back.n, 2);
    assert_memory_equal(back.items, t.items, 2 * sizeof *t.items);

    /* every truncation is refused and leaves nothing behind */
    for (size_t len = 0; len < b.len; len++) {
        struct ns_reqid_table cut = {0};
        ns_rd_init(&rd, b.data, len);
        long before = ns_alloc_count();
        assert_int_equal(ns_reqid_decode_state(&cut, &rd), NS_EPROTO);
        assert_int_equal(cut.n, 0);
        assert_int_equal(ns_alloc_count(), before);
    }
    /* unsorted, origin 0, high 0, and a count over the limit */
    uint8_t *bad = ns_malloc(b.len);
    size_t offsets[] = {4 + each + 7, 4 + 7, 4 + 8 * 3 - 1};
    uint8_t values[] = {1, 0, 0};
    for (size_t k = 0; k < 3; k++) {
        memcpy(bad, b.data, b.len);
        bad[offsets[k]] = values[k];
        struct ns_reqid_table x = {0};
        ns_rd_init(&rd, bad, b.len);
        assert_int_equal(ns_reqid_decode_state(&x, &rd), NS_EPROTO);
    }
    memcpy(bad, b.data, b.len);
    bad[3] = NS_REQID_MAX_ORIGINS + 1;
    struct ns_reqid_table x = {0};
    ns_rd_init(&rd, bad, b.len);
    assert_int_equal(ns_reqid_decode_state(&x, &rd), NS_EPROTO);
    ns_free(bad);
    ns_buf_close(&b);
    ns_reqid_table_close(&back);
    ns_reqid_table_close(&t);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    struct ns_reqid_table t = {0};
    struct ns_reqid r = id(4, 1, 1);
    ns_alloc_fail_at(0, 0);
    assert_int_equal(ns_reqid_record(&t, &r, 1), NS_ENOMEM);
    ns_alloc_fail_at(-1, 0);
    assert_int_equal(t.n, 0);
    assert_int_equal(ns_reqid_check(&t, &r), NS_REQID_NEW);
    assert_int_equal(ns_reqid_record(&t, &r, 1), 0);
    ns_reqid_table_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window),        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_eviction),      cmocka_unit_test(test_encoding),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
