/* Tests of a client connection's lifecycle (src/net/conn_state.c): the
 * exact set of legal state changes, the paths conn.c and conn_tls.c take, and
 * that nothing leaves CLOSED or goes back to NEW. The sockets themselves are
 * covered by tests/process/test_bad_input.py, test_stop_stress.py and
 * tests/security/test_tls*.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/net/net_int.h"

#define NEW NS_CONN_NEW
#define HS NS_CONN_HANDSHAKING
#define OPEN NS_CONN_OPEN
#define PAUSED NS_CONN_PAUSED
#define RESUMING NS_CONN_RESUMING
#define CLOSING NS_CONN_CLOSING
#define CLOSED NS_CONN_CLOSED

/* Written out here, not derived from the table under test. */
static const struct {
    enum ns_conn_state from, to;
} expected[] = {
    {NEW, OPEN},      {NEW, HS},           {NEW, CLOSING},
    {HS, OPEN},       {HS, CLOSING},       {OPEN, PAUSED},
    {OPEN, CLOSING},  {PAUSED, RESUMING},  {PAUSED, CLOSING},
    {RESUMING, OPEN}, {RESUMING, CLOSING}, {CLOSING, CLOSED},
};

static bool is_expected(enum ns_conn_state from, enum ns_conn_state to)
{
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        if (expected[i].from == from && expected[i].to == to) {
            return true;
        }
    }
    return false;
}

static void test_exact_table(void **state)
{
    (void)state;
    int n_legal = 0;
    for (int from = 0; from < NS_CONN_N_STATES; from++) {
        for (int to = 0; to < NS_CONN_N_STATES; to++) {
            bool legal = ns_conn_state_is_legal(from, to);
            if (legal != is_expected(from, to)) {
                fail_msg("%s -> %s: legal %d, expected %d",
                         ns_conn_state_name(from), ns_conn_state_name(to),
                         legal, is_expected(from, to));
            }
            n_legal += legal;
        }
    }
    assert_int_equal(n_legal, sizeof expected / sizeof expected[0]);
}

static void test_no_way_back(void **state)
{
    (void)state;
    for (int s = 0; s < NS_CONN_N_STATES; s++) {
        assert_false(ns_conn_state_is_legal(s, NEW));
        assert_false(ns_conn_state_is_legal(CLOSED, s));
        assert_false(ns_conn_state_is_legal(s, s)); /* no silent no-ops */
        if (s != CLOSING) {
            assert_false(ns_conn_state_is_legal(s, CLOSED));
        }
        if (s != CLOSING && s != CLOSED) {
            assert_true(ns_conn_state_is_legal(s, CLOSING));
        }
    }
    /* A paused connection resumes only through RESUMING (at a flush), and a
     * TLS one opens only once its handshake is done. */
    assert_false(ns_conn_state_is_legal(PAUSED, OPEN));
    assert_false(ns_conn_state_is_legal(HS, PAUSED));
    assert_false(ns_conn_state_is_legal(RESUMING, PAUSED));
    assert_false(ns_conn_state_is_legal(OPEN, HS));
    assert_false(ns_conn_state_is_legal(-1, OPEN));
    assert_false(ns_conn_state_is_legal(OPEN, NS_CONN_N_STATES));
}

/* The paths conn.c and conn_tls.c take, through ns_conn_set_state. */
static void walk(const enum ns_conn_state *path, size_t n)
{
    struct ns_conn c;
    memset(&c, 0, sizeof c);
    assert_int_equal(c.state, NEW); /* ns_conn_accept's calloc */
    for (size_t i = 0; i < n; i++) {
        assert_true(ns_conn_state_is_legal(c.state, path[i]));
        ns_conn_set_state(&c, path[i]);
        assert_int_equal(c.state, path[i]);
        assert_int_equal(ns_conn_is_closing(&c),
                         path[i] == CLOSING || path[i] == CLOSED);
    }
}

static void test_paths(void **state)
{
    (void)state;
    static const enum ns_conn_state plain[] = {
        OPEN, PAUSED, RESUMING, OPEN, PAUSED, RESUMING, OPEN, CLOSING, CLOSED};
    static const enum ns_conn_state tls[] = {HS, OPEN, PAUSED, CLOSING, CLOSED};
    static const enum ns_conn_state refused[] = {CLOSING, CLOSED};
    static const enum ns_conn_state slow_tls[] = {HS, CLOSING, CLOSED};
    static const enum ns_conn_state closed_resuming[] = {OPEN, PAUSED, RESUMING,
                                                         CLOSING, CLOSED};
    walk(plain, sizeof plain / sizeof plain[0]);
    walk(tls, sizeof tls / sizeof tls[0]);
    walk(refused, sizeof refused / sizeof refused[0]);
    walk(slow_tls, sizeof slow_tls / sizeof slow_tls[0]);
    walk(closed_resuming, sizeof closed_resuming / sizeof closed_resuming[0]);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(ns_conn_state_name(OPEN), "open");
    assert_string_equal(ns_conn_state_name(HS), "handshaking");
    for (int s = 0; s < NS_CONN_N_STATES; s++) {
        assert_non_null(ns_conn_state_name(s));
        assert_string_not_equal(ns_conn_state_name(s), "?");
    }
    assert_string_equal(ns_conn_state_name(NS_CONN_N_STATES), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_table),
        cmocka_unit_test(test_no_way_back),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
