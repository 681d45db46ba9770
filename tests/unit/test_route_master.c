/* ns_route_find_master: the masterAddr/haServerAddr of a slave's heartbeat
 * short-cut must equal what a real registration answers, and change nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "test_route_util.h"

static void assert_same_state(struct ns_route *route,
                              const struct ns_buf *before)
{
    struct ns_buf after;
    ns_buf_init(&after);
    assert_int_equal(ns_route_encode_state(route, &after), 0);
    assert_int_equal(after.len, before->len);
    assert_memory_equal(after.data, before->data, before->len);
    ns_buf_close(&after);
}

static void slave_gets_live_master(void **state)
{
    (void)state;
    struct ns_route *route = ns_route_create();
    struct ns_register a1;
    struct ns_register_result res;
    struct ns_buf before;
    char master[64], ha[64];

    assert_non_null(route);
    assert_int_equal(register_with(route, reg_a0, 0), NS_REGISTER_OK);
    reg_a1(&a1, 0);
    assert_int_equal(do_register(route, &a1, false, master, ha),
                     NS_REGISTER_OK);
    assert_string_equal(master, "127.0.0.1:10911");
    assert_string_equal(ha, "127.0.0.1:10912");

    /* The re-registration is unchanged, so the server answers it from here. */
    assert_true(ns_route_is_unchanged_registration(route, &a1, false));
    ns_buf_init(&before);
    assert_int_equal(ns_route_encode_state(route, &before), 0);
    assert_int_equal(ns_route_find_master(route, &a1, &res), 0);
    assert_int_equal(res.status, NS_REGISTER_OK);
    assert_string_equal(res.master_addr, master);
    assert_string_equal(res.ha_addr, ha);
    ns_register_result_close(&res);
    assert_same_state(route, &before);

    ns_buf_close(&before);
    ns_register_close(&a1);
    ns_route_destroy(route);
}

static void master_and_orphan_slave_get_none(void **state)
{
    (void)state;
    struct ns_route *route = ns_route_create();
    struct ns_register a0, a1;
    struct ns_register_result res;

    assert_non_null(route);
    reg_a1(&a1, 0);
    /* No group yet, then a group without a master. */
    assert_int_equal(ns_route_find_master(route, &a1, &res), 0);
    assert_null(res.master_addr);
    assert_null(res.ha_addr);
    assert_int_equal(do_register(route, &a1, false, NULL, NULL),
                     NS_REGISTER_OK);
    assert_int_equal(ns_route_find_master(route, &a1, &res), 0);
    assert_null(res.master_addr);

    reg_a0(&a0, 0);
    assert_int_equal(do_register(route, &a0, false, NULL, NULL),
                     NS_REGISTER_OK);
    assert_int_equal(ns_route_find_master(route, &a0, &res), 0);
    assert_null(res.master_addr); /* a master is told nothing */
    assert_int_equal(ns_route_find_master(route, &a1, &res), 0);
    assert_string_equal(res.master_addr, "127.0.0.1:10911");
    ns_register_result_close(&res);

    ns_register_close(&a0);
    ns_register_close(&a1);
    ns_route_destroy(route);
}

static void out_of_memory_is_reported(void **state)
{
    (void)state;
    struct ns_route *route = ns_route_create();
    struct ns_register a1;
    struct ns_register_result res;

    assert_non_null(route);
    assert_int_equal(register_with(route, reg_a0, 0), NS_REGISTER_OK);
    reg_a1(&a1, 0);
    assert_int_equal(do_register(route, &a1, false, NULL, NULL),
                     NS_REGISTER_OK);
    for (long k = 0;; k++) {
        ns_alloc_fail_at(k, 1);
        int rv = ns_route_find_master(route, &a1, &res);
        ns_alloc_fail_at(-1, 0);
        if (rv == 0) {
            assert_string_equal(res.master_addr, "127.0.0.1:10911");
            ns_register_result_close(&res);
            break;
        }
        assert_int_equal(rv, NS_ENOMEM);
        assert_null(res.master_addr);
    }
    ns_register_close(&a1);
    ns_route_destroy(route);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slave_gets_live_master),
        cmocka_unit_test(master_and_orphan_slave_get_none),
        cmocka_unit_test(out_of_memory_is_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
