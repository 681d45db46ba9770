/* The fast-path expiry over the simulated cluster (sim.h) against a broker
 * that moved: it registered on the leader, closed that connection and
 * registered again through a follower. The leader, seeing the close before
 * any node reported the broker, expires it at once (docs/design.md §5); the
 * new registration was already in the log ahead of that expiry, so the expiry
 * must leave it (it names the registration the leader decided on). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

/* The broker's new DataVersion: a changed registration, so that no node
 * answers it from its table and it goes through the log. */
static const char EXPIRY_BODY_V2[] =
    "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
    "{\"counter\":2,\"stateVersion\":0,\"timestamp\":1700000000000},"
    "\"topicConfigTable\":{\"TopicA\":{\"perm\":6,\"readQueueNums\":4,"
    "\"topicName\":\"TopicA\",\"topicSysFlag\":0,\"writeQueueNums\":4},"
    "\"TopicB\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"TopicB\","
    "\"topicSysFlag\":0,\"writeQueueNums\":4}}}}";

#define EXPIRY_ADDR "10.1.0.1:10911"

struct expiry_appended {
    unsigned leader;
    uint64_t last;
};

/* The leader appended an entry (the forwarded registration) that it has not
 * applied yet. */
static bool expiry_appended(struct sim *s, void *arg)
{
    struct expiry_appended *a = arg;
    struct raft *r = raft_fixture_get(&s->f, a->leader);
    return raft_last_index(r) > a->last && raft_last_applied(r) <= a->last;
}

/* Index of node i's last applied entry of type (0: none). */
static uint64_t expiry_last_of(struct sim *s, unsigned i, int type)
{
    uint64_t index = 0;
    for (unsigned k = 0; k < s->nodes[i].n_applied; k++) {
        if (s->nodes[i].applied[k].type == type) {
            index = s->nodes[i].applied[k].index;
        }
    }
    return index;
}

static unsigned expiry_n_expiries(struct sim *s, unsigned i)
{
    return sim_n_applied(s, i, NS_CMD_EXPIRE_BROKERS, false) +
           sim_n_applied(s, i, NS_CMD_EXPIRE_BROKERS_SEEN, false);
}

static void test_moved_broker_survives_fast_expiry(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    /* past the post-takeover settle, after which the fast path acts at once */
    sim_run_for(s, NS_LIVENESS_TABLE_FAST_SETTLE_MS + 500);
    assert_int_equal(sim_settle(s), l);
    unsigned fo = sim_follower(s, l, 0);
    struct sim_client *cl = sim_client(s, l);
    struct sim_client *cf = sim_client(s, fo);

    int32_t op = sim_send_register(cl, "broker-a", EXPIRY_ADDR, 0);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(cl, op, 30000, &reply));
    assert_int_equal(reply.code, NS_CODE_SUCCESS);
    ns_cmd_close(&reply);
    sim_settle(s);

    /* The new registration reaches the leader's log ... */
    struct expiry_appended a = {l, ns_node_last_applied(s->nodes[l].node)};
    struct ns_cmd req;
    sim_register_request(&req, "broker-a", EXPIRY_ADDR, 0);
    req.body = (const uint8_t *)EXPIRY_BODY_V2;
    req.body_len = strlen(EXPIRY_BODY_V2);
    op = sim_client_send(cf, &req);
    ns_cmd_close(&req);
    assert_true(sim_run_until(s, expiry_appended, &a, 1000));
    /* ... and, before the leader applied it, the old connection closes: no
     * node reported the broker yet, so the leader expires it at once. */
    assert_int_equal(ns_route_n_brokers(s->nodes[l].state.route), 1);
    ns_conn_close(cl->conn, "test: the broker moved");
    assert_non_null(sim_wait_reply(cf, op, 30000, &reply));
    assert_int_equal(reply.code, NS_CODE_SUCCESS);
    ns_cmd_close(&reply);
    sim_run_for(s, 500);
    sim_settle(s);

    for (unsigned i = 0; i < s->n; i++) {
        uint64_t reg = expiry_last_of(s, i, NS_CMD_REGISTER_BROKER);
        uint64_t exp = expiry_last_of(s, i, NS_CMD_EXPIRE_BROKERS);
        if (exp == 0) {
            exp = expiry_last_of(s, i, NS_CMD_EXPIRE_BROKERS_SEEN);
        }
        /* the race happened: one expiry, after the registration */
        assert_int_equal(expiry_n_expiries(s, i), 1);
        assert_true(reg != 0 && reg < exp);
        if (ns_route_n_brokers(s->nodes[i].state.route) != 1) {
            fail_msg("node %u: the expiry at %llu deleted the registration "
                     "at %llu",
                     i, (unsigned long long)exp, (unsigned long long)reg);
        }
        assert_true(ns_route_broker_timeout(s->nodes[i].state.route, "c1",
                                            EXPIRY_ADDR) >= 0);
        assert_int_equal(ns_route_n_topics(s->nodes[i].state.route), 2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_moved_broker_survives_fast_expiry,
                                        sim_fixture_setup3,
                                        sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_moved_broker_survives_fast_expiry,
                                        sim_fixture_setup5,
                                        sim_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
