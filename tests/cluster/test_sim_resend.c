/* A forwarded write sent again (NS_EXT_RESEND, cluster_submit.c route) over
 * the simulated cluster (sim.h): its request id must reach the log, never be
 * answered from the state nor joined to another id's entry
 * (docs/exactly-once.md), so that a late first copy of it is a DUPLICATE and
 * not a second effect. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

struct registered_on {
    unsigned node;
};

static bool registered(struct sim *s, void *arg)
{
    struct registered_on *a = arg;
    return ns_route_n_brokers(s->nodes[a->node].state.route) == 1;
}

/* A registration through a follower is applied, its answer is lost and the
 * leader dies. The next leader's state holds the registration exactly, yet
 * the follower's resend is not answered from it (as a first send would be,
 * answer_applied_registration): it makes a second entry, applied as a
 * DUPLICATE. The broker gets SUCCESS and is registered once. */
static void test_resent_registration_reaches_the_log(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    unsigned other = sim_follower(s, l, 1);
    struct sim_client *c = sim_client(s, fo);
    s->drop_forward_replies = 1;
    int32_t op = sim_send_register(c, "broker-a", "10.1.0.1:10911", 0);
    struct registered_on a = {other};
    assert_true(sim_run_until(s, registered, &a, 2000));
    assert_int_equal(s->drop_forward_replies, 0); /* the answer was lost */
    assert_null(sim_find_reply(c, op));
    sim_kill(s, l);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(c, op, 30000, &reply));
    assert_int_equal(reply.code, NS_CODE_SUCCESS);
    ns_cmd_close(&reply);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        if (i == l) {
            continue;
        }
        assert_int_equal(ns_route_n_brokers(s->nodes[i].state.route), 1);
        /* the first and the resend; the resend's id found applied */
        assert_int_equal(sim_n_applied(s, i, NS_CMD_REGISTER_BROKER, false), 2);
        assert_int_equal(sim_n_applied(s, i, NS_CMD_REGISTER_BROKER, true), 1);
    }
}

static int32_t send_forward(struct sim_client *c, uint64_t seq, bool resend)
{
    struct ns_command kv;
    ns_command_init(&kv, NS_CMD_KV_PUT);
    kv.leader_time_ms = 1;
    kv.u.kv.ns = "sim";
    kv.u.kv.key = "k";
    kv.u.kv.value = "same";
    kv.reqid.origin = 42;
    kv.reqid.run = 1;
    kv.reqid.seq = seq;
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_command_encode(&kv, &b), 0);
    struct ns_cmd req;
    sim_request(&req, NS_CODE_FORWARD);
    req.language = NS_LANG_OTHER;
    req.body = b.data;
    req.body_len = b.len;
    if (resend) {
        assert_int_equal(ns_cmd_ext_set(&req, NS_EXT_RESEND, "true"), 0);
    }
    sim_sign(&req);
    int32_t op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    ns_buf_close(&b);
    return op;
}

/* Two forwarded writes equal but for their request ids reach the leader
 * together: a first send and a resend. The resend does not share the first
 * one's entry (its id must reach the log), so each id is applied: two
 * entries on every node, both new. */
static void test_resend_never_joins_another_id(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, l);
    int32_t first = send_forward(c, 1, false);
    int32_t again = send_forward(c, 2, true);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(c, first, 30000, &reply));
    assert_int_equal(reply.code, NS_CODE_SUCCESS);
    ns_cmd_close(&reply);
    assert_non_null(sim_wait_reply(c, again, 30000, &reply));
    assert_int_equal(reply.code, NS_CODE_SUCCESS);
    ns_cmd_close(&reply);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "k", "same");
        assert_int_equal(sim_n_applied(s, i, NS_CMD_KV_PUT, false), 2);
        assert_int_equal(sim_n_applied(s, i, NS_CMD_KV_PUT, true), 2);
    }
}

#define BOTH(test)                                                             \
    cmocka_unit_test_setup_teardown(test, sim_fixture_setup3,                  \
                                    sim_fixture_teardown),                     \
        cmocka_unit_test_setup_teardown(test, sim_fixture_setup5,              \
                                        sim_fixture_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_resent_registration_reaches_the_log),
        BOTH(test_resend_never_joins_another_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
