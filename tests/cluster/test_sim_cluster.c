/* Cluster behaviour over the simulated cluster (sim.h), 3 and 5 full nodes
 * on virtual time: consistent reads on a follower, a member added and
 * removed with MEMBER_ADD / MEMBER_REMOVE, and a broker's expiry after a
 * failover. The write path itself is test_sim_write.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

/* One member more in the cluster file, not bootstrapped. */
static int setup3_plus1(void **state)
{
    *state = sim_fixture_new(3, 4, NULL);
    return 0;
}

static int setup5_plus1(void **state)
{
    *state = sim_fixture_new(5, 6, NULL);
    return 0;
}

/* --- consistent reads --- */

/* A follower whose disk is slow applies the leader's entries late: right
 * after the leader answered a write, a plain read there misses it, a
 * consistent one (raftnsConsistent) waits until it applied the leader's read
 * index, and returns it. */
static void test_consistent_read_on_a_follower(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    raft_fixture_set_disk_latency(&s->f, fo, 500);
    struct sim_client *cl = sim_client(s, l);
    struct sim_client *cf = sim_client(s, fo);
    int32_t put = sim_send_kv_put(cl, "k", "v1");
    sim_expect_code(cl, put, NS_CODE_SUCCESS);
    assert_null(sim_kv(s, fo, "k")); /* the follower lags */
    int32_t plain = sim_send_kv_get(cf, "k", false);
    int32_t consistent = sim_send_kv_get(cf, "k", true);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(cf, consistent, 10000, &reply));
    assert_int_equal(reply.code, NS_CODE_SUCCESS);
    assert_non_null(ns_cmd_ext_find(&reply, "value"));
    assert_string_equal(ns_cmd_ext_find(&reply, "value"), "v1");
    ns_cmd_close(&reply);
    assert_non_null(sim_wait_reply(cf, plain, 10000, &reply));
    assert_int_equal(reply.code, NS_CODE_QUERY_NOT_FOUND);
    ns_cmd_close(&reply);
}

/* A consistent read on a follower cut off from the leader is refused (no
 * leader confirms it) rather than answered from its own state. */
static void test_consistent_read_without_a_leader(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    struct sim_client *cl = sim_client(s, l);
    struct sim_client *cf = sim_client(s, fo);
    sim_cut(s, fo);
    int32_t put = sim_send_kv_put(cl, "k", "v1");
    sim_expect_code(cl, put, NS_CODE_SUCCESS);
    int32_t get = sim_send_kv_get(cf, "k", true);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(cf, get, 10000, &reply));
    assert_int_not_equal(reply.code, NS_CODE_SUCCESS);
    assert_int_not_equal(reply.code, NS_CODE_QUERY_NOT_FOUND);
    ns_cmd_close(&reply);
    sim_heal(s, fo);
}

/* --- a follower that is not ready (docs/readiness.md) --- */

/* RAFTNS_TEST_READY_DELAY_MS holds every follower "not ready" while it knows
 * a leader (the hook of test_server_forward.c's same test). */
static int setup3_unready(void **state)
{
    assert_int_equal(setenv("RAFTNS_TEST_READY_DELAY_MS", "600000", 1), 0);
    int rv = sim_fixture_setup3(state);
    assert_int_equal(unsetenv("RAFTNS_TEST_READY_DELAY_MS"), 0);
    return rv;
}

static bool leader_known(struct sim *s, void *arg)
{
    unsigned fo = *(unsigned *)arg;
    int l = sim_leader(s);
    return l >= 0 && ns_node_leader_id(s->nodes[fo].node) == s->nodes[l].id &&
           ns_node_last_applied(s->nodes[fo].node) >=
               ns_node_last_applied(s->nodes[l].node);
}

/* A follower that is not ready answers a route read with the leader's
 * bytes and names the leader (raftnsServedBy), a miss too; an unchanged
 * re-registration is acknowledged by way of the leader. */
static void test_unready_follower_reads_through_the_leader(void **state)
{
    struct sim *s = *state;
    assert_true(sim_run_until(s, sim_pred_has_leader, NULL, 30000));
    unsigned l = (unsigned)sim_leader(s);
    unsigned fo = sim_follower(s, l, 0);
    struct sim_client *cl = sim_client(s, l);
    struct sim_client *cf = sim_client(s, fo);
    int32_t op = sim_send_register(cl, "broker-a", "10.1.0.1:10911", 0);
    sim_expect_code(cl, op, NS_CODE_SUCCESS);
    assert_true(sim_run_until(s, leader_known, &fo, 10000));
    assert_false(ns_node_is_ready(s->nodes[fo].node));
    char leader_id[24];
    snprintf(leader_id, sizeof leader_id, "%llu",
             (unsigned long long)s->nodes[l].id);
    static const char *const topics[] = {"TopicA", "Nope"};
    static const int32_t codes[] = {NS_CODE_SUCCESS, NS_CODE_TOPIC_NOT_EXIST};
    for (int k = 0; k < 2; k++) {
        struct ns_cmd req;
        sim_request(&req, NS_CODE_GET_ROUTEINFO_BY_TOPIC);
        assert_int_equal(ns_cmd_ext_set(&req, "topic", topics[k]), 0);
        op = sim_client_send(cf, &req);
        ns_cmd_close(&req);
        struct ns_cmd reply;
        assert_non_null(sim_wait_reply(cf, op, 10000, &reply));
        assert_int_equal(reply.code, codes[k]);
        assert_non_null(ns_cmd_ext_find(&reply, NS_EXT_SERVED_BY));
        assert_string_equal(ns_cmd_ext_find(&reply, NS_EXT_SERVED_BY),
                            leader_id);
        ns_cmd_close(&reply);
    }
    op = sim_send_register(cf, "broker-a", "10.1.0.1:10911", 0);
    sim_expect_code(cf, op, NS_CODE_SUCCESS);
    assert_false(ns_node_is_ready(s->nodes[fo].node));
    assert_int_equal(sim_n_applied(s, l, NS_CMD_REGISTER_BROKER, false), 1);
}

/* --- membership --- */

static int32_t send_member(struct sim_client *c, int32_t code, uint64_t id,
                           const struct sim_node *nd)
{
    struct ns_cmd req;
    sim_request(&req, code);
    req.language = NS_LANG_OTHER;
    char v[24];
    snprintf(v, sizeof v, "%llu", (unsigned long long)id);
    assert_int_equal(ns_cmd_ext_set(&req, NS_EXT_ID, v), 0);
    if (nd != NULL) {
        assert_int_equal(ns_cmd_ext_set(&req, NS_EXT_RAFT_ADDR, nd->raft_addr),
                         0);
        assert_int_equal(
            ns_cmd_ext_set(&req, NS_EXT_CLIENT_ADDR, nd->client_addr), 0);
    }
    sim_sign(&req);
    int32_t op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    return op;
}

static unsigned n_voters(struct sim *s, unsigned i)
{
    struct ns_node_member *m = NULL;
    size_t n = 0;
    assert_int_equal(ns_node_members(s->nodes[i].node, &m, &n), 0);
    unsigned voters = 0;
    for (size_t k = 0; k < n; k++) {
        voters += m[k].role == NS_MEMBER_VOTER;
    }
    ns_free(m);
    return voters;
}

/* A new node joins with MEMBER_ADD (sent to the leader), catches up, takes
 * writes as a follower; then MEMBER_REMOVE sent to a follower (relayed to
 * the leader) takes it out of the configuration and the member table. */
static void test_member_add_and_remove(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned voters = s->n;
    struct sim_client *cl = sim_client(s, l);
    int32_t op = sim_send_kv_put(cl, "before", "x");
    sim_expect_code(cl, op, NS_CODE_SUCCESS);
    unsigned added = sim_grow(s);
    /* a read at the new node before it is ready is held, and answered by
     * the leader once the node knows one */
    struct sim_client *early = sim_client(s, added);
    int32_t get = sim_send_kv_get(early, "before", false);
    op = send_member(cl, NS_CODE_MEMBER_ADD, s->nodes[added].id,
                     &s->nodes[added]);
    sim_expect_code(cl, op, NS_CODE_SUCCESS);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(early, get, 10000, &reply));
    assert_int_equal(reply.code, NS_CODE_SUCCESS);
    assert_non_null(ns_cmd_ext_find(&reply, "value"));
    assert_string_equal(ns_cmd_ext_find(&reply, "value"), "x");
    ns_cmd_close(&reply);
    s->n_members = voters + 1;
    l = sim_settle(s);
    assert_int_equal(n_voters(s, l), voters + 1);
    assert_int_equal(n_voters(s, added), voters + 1);
    struct sim_client *cn = sim_client(s, added);
    op = sim_send_kv_put(cn, "joined", "yes");
    sim_expect_code(cn, op, NS_CODE_SUCCESS);
    /* the answer needs a majority and the joined node itself, not every
     * node: the others learn the commit on the leader's next message */
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "joined", "yes");
    }

    struct sim_client *cf = sim_client(s, sim_follower(s, l, 0));
    op = send_member(cf, NS_CODE_MEMBER_REMOVE, s->nodes[added].id, NULL);
    sim_expect_code(cf, op, NS_CODE_SUCCESS);
    sim_kill(s, added); /* out of the cluster: it hears nothing more */
    s->n_members = voters;
    l = sim_settle(s);
    assert_int_equal(n_voters(s, l), voters);
    struct sim_client *c2 = sim_client(s, sim_follower(s, l, 0));
    op = sim_send_kv_put(c2, "after", "removed");
    sim_expect_code(c2, op, NS_CODE_SUCCESS);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        if (i != added) {
            sim_assert_kv(s, i, "after", "removed");
            assert_int_equal(s->nodes[i].state.n_members, voters);
        }
    }
}

static bool leader_is(struct sim *s, void *arg)
{
    int l = sim_leader(s);
    return l >= 0 && (unsigned)l == *(unsigned *)arg;
}

/* MEMBER_LIST on a follower lists every voter; LEADER_TRANSFER sent to a
 * follower (relayed to the leader) hands leadership to the id asked for. */
static void test_member_list_and_transfer(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned to = sim_follower(s, l, s->n - 2); /* the last follower */
    struct sim_client *c = sim_client(s, sim_follower(s, l, 0));
    struct ns_cmd req;
    sim_request(&req, NS_CODE_MEMBER_LIST);
    req.language = NS_LANG_OTHER;
    sim_sign(&req);
    int32_t op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(c, op, 10000, &reply));
    assert_int_equal(reply.code, NS_CODE_SUCCESS);
    char *body = ns_strndup((const char *)reply.body, reply.body_len);
    ns_cmd_close(&reply);
    for (unsigned i = 0; i < s->n; i++) {
        assert_non_null(strstr(body, s->nodes[i].client_addr));
    }
    ns_free(body);
    op = send_member(c, NS_CODE_LEADER_TRANSFER, s->nodes[to].id, NULL);
    sim_expect_code(c, op, NS_CODE_SUCCESS);
    assert_true(sim_run_until(s, leader_is, &to, 10000));
    struct sim_client *cn = sim_client(s, l); /* the old leader follows */
    op = sim_send_kv_put(cn, "after-transfer", "v");
    sim_expect_code(cn, op, NS_CODE_SUCCESS);
}

/* The leader is asked to remove itself: it hands leadership over, relays the
 * removal to the new leader and answers; the rest goes on without it. */
static void test_leader_removes_itself(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned voters = s->n;
    struct sim_client *c = sim_client(s, l);
    int32_t op = send_member(c, NS_CODE_MEMBER_REMOVE, s->nodes[l].id, NULL);
    sim_expect_code(c, op, NS_CODE_SUCCESS);
    sim_kill(s, l);
    s->n_members = voters - 1;
    unsigned nl = sim_settle(s);
    assert_int_not_equal(nl, l);
    assert_int_equal(n_voters(s, nl), voters - 1);
    struct sim_client *c2 = sim_client(s, sim_follower(s, nl, 0));
    op = sim_send_kv_put(c2, "after", "removed");
    sim_expect_code(c2, op, NS_CODE_SUCCESS);
}

/* Membership requests that cannot be done are answered with why. */
static void test_member_requests_refused(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, l);
    struct ns_cmd req;
    sim_request(&req, NS_CODE_MEMBER_ADD);
    req.language = NS_LANG_OTHER;
    sim_sign(&req);
    int32_t op = sim_client_send(c, &req); /* no id */
    ns_cmd_close(&req);
    sim_expect_code(c, op, NS_CODE_SYSTEM_ERROR);
    sim_request(&req, NS_CODE_MEMBER_ADD);
    req.language = NS_LANG_OTHER;
    assert_int_equal(ns_cmd_ext_set(&req, NS_EXT_ID, "9"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, NS_EXT_RAFT_ADDR, "not-an-address"),
                     0);
    sim_sign(&req);
    op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    sim_expect_code(c, op, NS_CODE_SYSTEM_ERROR);
    /* refusals that name the member (gateway/member_check.c and
     * handle_cluster.c's role checks) */
    static const struct {
        int32_t code;
        const char *id, *raft, *role, *remark;
    } refusals[] = {
        {NS_CODE_MEMBER_ADD, "2", "10.0.0.9:9000", NULL,
         "raftns: 2 is already a member"},
        {NS_CODE_MEMBER_ADD, "9", "10.0.0.9:9000", "observer", NULL},
        {NS_CODE_MEMBER_REMOVE, "9", NULL, NULL, "raftns: 9 is not a member"},
        {NS_CODE_MEMBER_ASSIGN, "9", NULL, "standby",
         "raftns: no member 9 (raftnsctl member list)"},
        {NS_CODE_MEMBER_ASSIGN, "2", NULL, "voter",
         "raftns: member 2 is already a voter"},
        {NS_CODE_MEMBER_ASSIGN, "2", NULL, NULL, NULL},
    };
    for (size_t k = 0; k < sizeof refusals / sizeof refusals[0]; k++) {
        sim_request(&req, refusals[k].code);
        req.language = NS_LANG_OTHER;
        assert_int_equal(ns_cmd_ext_set(&req, NS_EXT_ID, refusals[k].id), 0);
        if (refusals[k].raft != NULL) {
            assert_int_equal(
                ns_cmd_ext_set(&req, NS_EXT_RAFT_ADDR, refusals[k].raft), 0);
            assert_int_equal(
                ns_cmd_ext_set(&req, NS_EXT_CLIENT_ADDR, "10.0.0.9:9876"), 0);
        }
        if (refusals[k].role != NULL) {
            assert_int_equal(
                ns_cmd_ext_set(&req, NS_EXT_ROLE, refusals[k].role), 0);
        }
        sim_sign(&req);
        op = sim_client_send(c, &req);
        ns_cmd_close(&req);
        struct ns_cmd r;
        assert_non_null(sim_wait_reply(c, op, 30000, &r));
        if (r.code != NS_CODE_SYSTEM_ERROR ||
            (refusals[k].remark != NULL &&
             (r.remark == NULL || strncmp(r.remark, refusals[k].remark,
                                          strlen(refusals[k].remark)) != 0))) {
            fail_msg("refusal %zu: code %d remark %s", k, (int)r.code,
                     r.remark ? r.remark : "(none)");
        }
        ns_cmd_close(&r);
    }
    /* unsigned: refused before anything is looked at */
    sim_request(&req, NS_CODE_MEMBER_REMOVE);
    assert_int_equal(ns_cmd_ext_set(&req, NS_EXT_ID, "2"), 0);
    op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    sim_expect_code(c, op, NS_CODE_NO_PERMISSION);
    assert_int_equal(n_voters(s, l), s->n);
}

/* --- expiry after a failover --- */

struct broker_gone {
    unsigned except;
};

static bool brokers_gone(struct sim *s, void *arg)
{
    struct broker_gone *g = arg;
    for (unsigned i = 0; i < s->n; i++) {
        if (i != g->except &&
            ns_route_n_brokers(s->nodes[i].state.route) != 0) {
            return false;
        }
    }
    return true;
}

#define BROKER_TIMEOUT_MS 10000

/* A broker registered through a follower stops sending heartbeats and the
 * leader dies. The new leader grants every broker a full timeout from its
 * takeover (docs/design.md §5), so the broker is still routed until then,
 * and expired by one EXPIRE_BROKERS entry on every node after it. */
static void test_expiry_after_failover(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    struct sim_client *c = sim_client(s, fo);
    int32_t op =
        sim_send_register(c, "broker-a", "10.1.0.1:10911", BROKER_TIMEOUT_MS);
    sim_expect_code(c, op, NS_CODE_SUCCESS);
    sim_run_for(s, 2000); /* the follower reported it to the leader */
    sim_kill(s, l);
    unsigned nl = sim_settle(s);
    assert_int_not_equal(nl, l);
    uint64_t takeover = sim_now(s);
    sim_run_for(s, BROKER_TIMEOUT_MS - 2000);
    for (unsigned i = 0; i < s->n; i++) {
        if (i != l) {
            assert_int_equal(ns_route_n_brokers(s->nodes[i].state.route), 1);
        }
    }
    struct broker_gone g = {l};
    assert_true(sim_run_until(s, brokers_gone, &g, 3 * BROKER_TIMEOUT_MS));
    assert_true(sim_now(s) - takeover >= BROKER_TIMEOUT_MS - 2000);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        if (i != l) {
            assert_int_equal(
                sim_n_applied(s, i, NS_CMD_EXPIRE_BROKERS_SEEN, true), 1);
        }
    }
}

/* --- divergence (docs/divergence.md) --- */

static int setup_ckpt(void **state, unsigned n)
{
    struct sim_opts o = {.checkpoint_entries = 4};
    struct sim *s = sim_fixture_new(n, n, &o);
    *state = s;
    return 0;
}

static int setup3_ckpt(void **state)
{
    return setup_ckpt(state, 3);
}

static int setup5_ckpt(void **state)
{
    return setup_ckpt(state, 5);
}

static bool diverged(struct sim *s, void *arg)
{
    return ns_node_is_diverged(s->nodes[*(unsigned *)arg].node);
}

static bool recovered(struct sim *s, void *arg)
{
    unsigned i = *(unsigned *)arg;
    return !ns_node_is_diverged(s->nodes[i].node) &&
           ns_kv_find(s->nodes[i].state.kv, "raftns.test", "corrupt") == NULL;
}

static uint64_t digest_of(struct sim *s, unsigned i)
{
    uint64_t d = 0;
    assert_int_equal(ns_snapshot_digest(&s->nodes[i].state, &d), 0);
    return d;
}

/* Node bad's state goes wrong outside the log (the observer's test hook, a
 * bug's stand-in). The next checkpoint's digests disagree; the majority's
 * verdict marks it diverged; it copies a healthy state (a leader hands its
 * leadership over first) and serves again. Every node ends with the same
 * state. */
static void diverge_and_recover(struct sim *s, unsigned l, unsigned bad)
{
    struct sim_client *c = sim_client(s, bad != l ? l : sim_follower(s, l, 0));
    struct sim_client *cb = sim_client(s, bad);
    s->nodes[bad].observe->ig->ckpt.corrupt_at =
        ns_node_last_applied(s->nodes[bad].node) + 2;
    for (int k = 0; k < 8; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        int32_t op = sim_send_kv_put(c, key, "v");
        sim_expect_code(c, op, NS_CODE_SUCCESS);
    }
    assert_true(sim_run_until(s, diverged, &bad, 20000));
    /* a diverged node takes no write */
    int32_t w = sim_send_kv_put(cb, "while-diverged", "v");
    sim_expect_code(cb, w, NS_CODE_SYSTEM_ERROR);
    /* a diverged node does not answer from its own state: the leader
     * does, through it (docs/readiness.md) */
    int32_t get = sim_send_kv_get(cb, "k0", false);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(cb, get, 10000, &reply));
    assert_int_equal(reply.code, NS_CODE_SUCCESS);
    int64_t served_by = 0;
    assert_true(ns_cmd_ext_int64(&reply, NS_EXT_SERVED_BY, &served_by));
    assert_int_not_equal(served_by, (int64_t)s->nodes[bad].id);
    ns_cmd_close(&reply);
    assert_true(sim_run_until(s, recovered, &bad, 60000));
    int32_t op = sim_send_kv_put(cb, "after", "v");
    sim_expect_code(cb, op, NS_CODE_SUCCESS);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(digest_of(s, i), digest_of(s, bad));
        sim_assert_kv(s, i, "k7", "v");
    }
}

static void test_diverged_follower_recovers(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    diverge_and_recover(s, l, sim_follower(s, l, 0));
}

static void test_diverged_leader_hands_over_and_recovers(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    diverge_and_recover(s, l, l);
}

#define BOTH(test, s3, s5)                                                     \
    cmocka_unit_test_setup_teardown(test, s3, sim_fixture_teardown),           \
        cmocka_unit_test_setup_teardown(test, s5, sim_fixture_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_consistent_read_on_a_follower, sim_fixture_setup3,
             sim_fixture_setup5),
        BOTH(test_consistent_read_without_a_leader, sim_fixture_setup3,
             sim_fixture_setup5),
        BOTH(test_member_add_and_remove, setup3_plus1, setup5_plus1),
        cmocka_unit_test_setup_teardown(
            test_unready_follower_reads_through_the_leader, setup3_unready,
            sim_fixture_teardown),
        BOTH(test_member_list_and_transfer, sim_fixture_setup3,
             sim_fixture_setup5),
        BOTH(test_leader_removes_itself, sim_fixture_setup3,
             sim_fixture_setup5),
        BOTH(test_member_requests_refused, sim_fixture_setup3,
             sim_fixture_setup5),
        BOTH(test_expiry_after_failover, sim_fixture_setup3,
             sim_fixture_setup5),
        BOTH(test_diverged_follower_recovers, setup3_ckpt, setup5_ckpt),
        BOTH(test_diverged_leader_hands_over_and_recovers, setup3_ckpt,
             setup5_ckpt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
