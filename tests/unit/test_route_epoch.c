/* Unit tests of ns_route_epoch: every mutation of a route (including a
 * snapshot decode) moves that route's epoch and no other route's, reads
 * (route queries, the unchanged check, find_master, the reply cache) never do,
 * and a route replacing another continues its count. The register memo of the
 * server relies on all three. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/fsm.h"
#include "raftns/route.h"
#include "test_route_util.h"

#define MOVES(r, expr)                                                         \
    do {                                                                       \
        uint64_t before_ = ns_route_epoch(r);                                  \
        expr;                                                                  \
        assert_true(ns_route_epoch(r) > before_);                              \
    } while (0)

#define STAYS(r, expr)                                                         \
    do {                                                                       \
        uint64_t before_ = ns_route_epoch(r);                                  \
        expr;                                                                  \
        assert_true(ns_route_epoch(r) == before_);                             \
    } while (0)

static void mutations_move_reads_stay(void **state)
{
    (void)state;
    struct ns_route *route = ns_route_create();
    struct ns_route *other = ns_route_create();
    struct ns_register a0;
    struct ns_register_result res;
    int32_t count = 0;
    assert_non_null(route);
    assert_non_null(other);
    assert_int_equal(ns_route_epoch(route), 1);
    reg_a0(&a0, 1);
    MOVES(route, assert_int_equal(
                     ns_route_register_broker(route, &a0, false, &res), 0));
    ns_register_result_close(&res);
    /* Another route's changes are not this route's. */
    STAYS(route, assert_int_equal(
                     ns_route_register_broker(other, &a0, false, &res), 0));
    ns_register_result_close(&res);

    struct ns_buf out;
    ns_buf_init(&out);
    struct ns_route_query q = {.topic = "TopicA", .flavour = NS_JSON_LEGACY};
    const uint8_t *body = NULL;
    size_t len = 0;
    STAYS(route,
          assert_int_equal(ns_route_encode_topic_route(route, &q, &out), 0));
    STAYS(route,
          assert_int_equal(cached_route_body(route, &q, 0, &body, &len), 0));
    STAYS(route,
          assert_int_equal(cached_route_body(route, &q, 0, &body, &len), 0));
    STAYS(route,
          assert_true(ns_route_is_unchanged_registration(route, &a0, false)));
    STAYS(route, assert_int_equal(ns_route_find_master(route, &a0, &res), 0));
    ns_register_result_close(&res);
    ns_buf_reset(&out);
    STAYS(route, assert_int_equal(ns_route_encode_state(route, &out), 0));

    struct ns_route *copy = ns_route_create();
    assert_non_null(copy);
    struct ns_rd rd;
    ns_rd_init(&rd, out.data, out.len);
    MOVES(copy, assert_int_equal(ns_route_decode_state(copy, &rd), 0));
    STAYS(route, ns_route_destroy(copy));

    MOVES(route, ns_route_wipe_write_perm(route, "broker-a", &count));
    MOVES(route, ns_route_add_write_perm(route, "broker-a", &count));
    struct ns_queue_data qd = {.broker_name = "broker-a",
                               .read_queues = 1,
                               .write_queues = 1,
                               .perm = 6};
    MOVES(route, assert_int_equal(
                     ns_route_register_topic(route, "TopicC", &qd, 1), 0));
    MOVES(route,
          assert_int_equal(ns_route_delete_topic(route, "TopicC", NULL), 0));
    struct ns_broker_ref ref = {.cluster = "c1",
                                .broker_addr = "127.0.0.1:10911",
                                .broker_name = "broker-a",
                                .broker_id = 0};
    MOVES(route, assert_int_equal(ns_route_expire_brokers(route, &ref, 1), 0));
    MOVES(route,
          assert_int_equal(ns_route_unregister_brokers(route, &ref, 1), 0));
    ns_route_destroy(other);
    ns_route_destroy(route);
    ns_buf_close(&out);
    ns_register_close(&a0);
}

/* A restored route (a new object, perhaps at the freed one's address) must
 * not show an epoch the route it replaces had: a memo of "unchanged at epoch
 * e" would then skip the route check against different content. */
static void replacement_continues_the_count(void **state)
{
    (void)state;
    struct ns_route *old = ns_route_create();
    struct ns_route *fresh = ns_route_create();
    struct ns_register a0;
    struct ns_register_result res;
    assert_non_null(old);
    assert_non_null(fresh);
    reg_a0(&a0, 1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ns_route_register_broker(old, &a0, false, &res), 0);
        ns_register_result_close(&res);
    }
    uint64_t seen = ns_route_epoch(old);
    ns_route_continue_epoch(fresh, old);
    assert_true(ns_route_epoch(fresh) > seen);
    /* Also when the new route had moved further than the old one. */
    for (int i = 0; i < 10; i++) {
        assert_int_equal(ns_route_register_broker(fresh, &a0, false, &res), 0);
        ns_register_result_close(&res);
    }
    uint64_t ahead = ns_route_epoch(fresh);
    ns_route_continue_epoch(fresh, old);
    assert_true(ns_route_epoch(fresh) > ahead);
    ns_route_destroy(fresh);
    ns_route_destroy(old);
    ns_register_close(&a0);
}

/* The snapshot restore replaces the state's route by a new one: its epoch
 * continues from the one it replaces, even though the restored content came
 * from a route with a smaller count. */
static void restore_continues_the_count(void **state)
{
    (void)state;
    struct ns_state src, dst;
    struct ns_register a0;
    struct ns_register_result res;
    struct ns_buf snap;
    assert_int_equal(ns_state_init(&src), 0);
    assert_int_equal(ns_state_init(&dst), 0);
    ns_buf_init(&snap);
    reg_a0(&a0, 1);
    assert_int_equal(ns_route_register_broker(src.route, &a0, false, &res), 0);
    ns_register_result_close(&res);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ns_route_register_broker(dst.route, &a0, true, &res),
                         0);
        ns_register_result_close(&res);
    }
    uint64_t before = ns_route_epoch(dst.route);
    assert_true(ns_route_epoch(src.route) < before);
    assert_int_equal(ns_snapshot_encode(&src, &snap), 0);
    assert_int_equal(ns_snapshot_decode(&dst, snap.data, snap.len), 0);
    assert_true(ns_route_epoch(dst.route) > before);
    ns_buf_close(&snap);
    ns_register_close(&a0);
    ns_state_close(&src);
    ns_state_close(&dst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mutations_move_reads_stay),
        cmocka_unit_test(replacement_continues_the_count),
        cmocka_unit_test(restore_continues_the_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
