/* Unit tests of ns_route_epoch: every route mutation (including create,
 * destroy and snapshot decode) moves it, and reads (route queries, the
 * unchanged check, find_master, the reply cache) never do. The register memo
 * of the server relies on both halves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/route.h"
#include "test_route_util.h"

#define MOVES(expr)                                                            \
    do {                                                                       \
        uint64_t before_ = ns_route_epoch();                                   \
        expr;                                                                  \
        assert_true(ns_route_epoch() > before_);                               \
    } while (0)

#define STAYS(expr)                                                            \
    do {                                                                       \
        uint64_t before_ = ns_route_epoch();                                   \
        expr;                                                                  \
        assert_true(ns_route_epoch() == before_);                              \
    } while (0)

static void mutations_move_reads_stay(void **state)
{
    (void)state;
    struct ns_route *route = NULL;
    struct ns_register a0;
    struct ns_register_result res;
    int32_t count = 0;
    MOVES(route = ns_route_create());
    assert_non_null(route);
    reg_a0(&a0, 1);
    MOVES(
        assert_int_equal(ns_route_register_broker(route, &a0, false, &res), 0));
    ns_register_result_close(&res);

    struct ns_buf out;
    ns_buf_init(&out);
    struct ns_route_query q = {.topic = "TopicA", .flavour = NS_JSON_LEGACY};
    const uint8_t *body = NULL;
    size_t len = 0;
    STAYS(assert_int_equal(ns_route_encode_topic_route(route, &q, &out), 0));
    STAYS(assert_int_equal(
        ns_route_cached_topic_route(route, &q, 0, &body, &len), 0));
    STAYS(assert_int_equal(
        ns_route_cached_topic_route(route, &q, 0, &body, &len), 0));
    STAYS(assert_true(ns_route_is_unchanged_registration(route, &a0, false)));
    STAYS(assert_int_equal(ns_route_find_master(route, &a0, &res), 0));
    ns_register_result_close(&res);
    ns_buf_reset(&out);
    STAYS(assert_int_equal(ns_route_encode_state(route, &out), 0));

    struct ns_route *copy = NULL;
    MOVES(copy = ns_route_create());
    assert_non_null(copy);
    struct ns_rd rd;
    ns_rd_init(&rd, out.data, out.len);
    MOVES(assert_int_equal(ns_route_decode_state(copy, &rd), 0));
    MOVES(ns_route_destroy(copy));

    MOVES(ns_route_wipe_write_perm(route, "broker-a", &count));
    MOVES(ns_route_add_write_perm(route, "broker-a", &count));
    struct ns_queue_data qd = {.broker_name = "broker-a",
                               .read_queues = 1,
                               .write_queues = 1,
                               .perm = 6};
    MOVES(
        assert_int_equal(ns_route_register_topic(route, "TopicC", &qd, 1), 0));
    MOVES(assert_int_equal(ns_route_delete_topic(route, "TopicC", NULL), 0));
    struct ns_broker_ref ref = {.cluster = "c1",
                                .broker_addr = "127.0.0.1:10911",
                                .broker_name = "broker-a",
                                .broker_id = 0};
    MOVES(assert_int_equal(ns_route_expire_brokers(route, &ref, 1), 0));
    MOVES(assert_int_equal(ns_route_unregister_brokers(route, &ref, 1), 0));
    MOVES(ns_route_destroy(route));
    ns_buf_close(&out);
    ns_register_close(&a0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mutations_move_reads_stay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
