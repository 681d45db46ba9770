/* Unit tests of the one binary search (include/raftns/sorted.h, src/base/
 * sorted.c): every key of a sorted array is found at its index, every absent
 * key gets its insertion point, for each field type and for n from 0 up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/sorted.h"

struct elem {
    char pad;
    const char *name;
    uint64_t u;
    int64_t i;
};

#define N_MAX 9

/* Keys 2k+1 (k < n): the even values fall between them. */
static void fill(struct elem *e, size_t n, char names[][8])
{
    for (size_t k = 0; k < n; k++) {
        snprintf(names[k], 8, "k%02u", (unsigned)(2 * k + 1) % 100u);
        e[k].name = names[k];
        e[k].u = UINT64_MAX - 2 * (n - k); /* unsigned order near the top */
        e[k].i = (int64_t)(2 * k + 1) - 8; /* negative and positive */
    }
}

static void check(size_t got, const bool *found, size_t want, bool want_found)
{
    assert_int_equal(got, want);
    assert_int_equal(*found, want_found);
}

static void every_key_and_gap(void **state)
{
    (void)state;
    struct elem e[N_MAX];
    char names[N_MAX][8];
    for (size_t n = 0; n <= N_MAX; n++) {
        fill(e, n, names);
        for (size_t v = 0; v <= 2 * n + 1; v++) {
            /* v odd: the key at index v/2; v even: insertion point v/2. */
            bool hit = v % 2 == 1 && v / 2 < n;
            size_t want = v / 2;
            bool found;
            char name[8];
            snprintf(name, sizeof name, "k%02zu", v);
            check(ns_sorted_search(e, n, sizeof *e, offsetof(struct elem, name),
                                   name, &found),
                  &found, want, hit);
            uint64_t u = UINT64_MAX - 2 * n + v - 1;
            check(ns_sorted_search_u64(e, n, sizeof *e,
                                       offsetof(struct elem, u), u, &found),
                  &found, want, hit);
            int64_t i = (int64_t)v - 8;
            check(ns_sorted_search_i64(e, n, sizeof *e,
                                       offsetof(struct elem, i), i, &found),
                  &found, want, hit);
        }
    }
}

/* An array of bare string pointers is searched with key_offset 0. */
static void array_of_strings(void **state)
{
    (void)state;
    const char *names[] = {"a", "b", "d"};
    bool found;
    assert_int_equal(ns_sorted_search(names, 3, sizeof *names, 0, "d", &found),
                     2);
    assert_true(found);
    assert_int_equal(ns_sorted_search(names, 3, sizeof *names, 0, "c", &found),
                     2);
    assert_false(found);
}

static int cmp_int(const void *elem, const void *ctx)
{
    int a = *(const int *)elem, b = *(const int *)ctx;
    return (a > b) - (a < b);
}

/* The search from a hint answers as the plain one for every key, every gap and
 * every hint (before, at, after the key, past the end), for n up to 70: more
 * than a few doublings each way. */
static void near_every_hint(void **state)
{
    (void)state;
    int a[70];
    bool none_found = true;
    int key = 1;
    /* an empty table's array may be NULL (an svec never grown) */
    assert_int_equal(ns_sorted_search_near_by(NULL, 0, sizeof *a, cmp_int, &key,
                                              3, &none_found),
                     0);
    assert_false(none_found);
    for (size_t n = 0; n <= 70; n++) {
        for (size_t k = 0; k < n; k++) {
            a[k] = (int)(2 * k + 1);
        }
        for (int v = 0; v <= (int)(2 * n + 1); v++) {
            bool want_found, found;
            size_t want =
                ns_sorted_search_by(a, n, sizeof *a, cmp_int, &v, &want_found);
            for (size_t hint = 0; hint <= n + 2; hint++) {
                size_t got = ns_sorted_search_near_by(a, n, sizeof *a, cmp_int,
                                                      &v, hint, &found);
                if (got != want || found != want_found) {
                    fail_msg("n %zu key %d hint %zu: %zu/%d, want %zu/%d", n, v,
                             hint, got, found, want, want_found);
                }
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_key_and_gap),
        cmocka_unit_test(array_of_strings),
        cmocka_unit_test(near_every_hint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
