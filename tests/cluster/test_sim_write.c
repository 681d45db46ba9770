/* The write path over the simulated cluster (sim.h): full nodes on one
 * raft_fixture with virtual time, 3 and 5 of them. A write through a
 * follower is answered once that follower applied it; identical forwarded
 * registrations share one entry; a forward whose leader is lost, or whose
 * answer is lost, is applied once; a partitioned follower's write waits for
 * the partition to heal. Each test fails against one mutant of the write
 * path (scripts/mutants.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

/* The follower answers once it applied the write itself: its applied index
 * when the reply left is at least the entry's; every node ends with the
 * value. */
static void test_write_through_a_follower(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    struct sim_client *c = sim_client(s, fo);
    for (int i = 1; i <= 3; i++) {
        char v[16];
        snprintf(v, sizeof v, "v%d", i);
        int32_t op = sim_send_kv_put(c, "k", v);
        sim_expect_code(c, op, NS_CODE_SUCCESS);
        struct sim_reply *r = sim_find_reply(c, op);
        uint64_t entry = ns_node_last_applied(s->nodes[l].node);
        assert_true(r->applied >= entry);
        sim_assert_kv(s, fo, "k", v);
    }
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "k", "v3");
        assert_int_equal(sim_n_applied(s, i, NS_CMD_KV_PUT, true), 3);
    }
}

/* Every node's heartbeat becomes heartbeat ms (virtual time; elections 20
 * times that), once the timers armed with the old one have run out. */
static void use_heartbeat(struct sim *s, unsigned heartbeat)
{
    for (unsigned i = 0; i < s->n; i++) {
        struct raft *r = raft_fixture_get(&s->f, i);
        raft_set_election_timeout(r, 20 * heartbeat);
        raft_set_heartbeat_timeout(r, heartbeat);
    }
    sim_run_for(s, 2 * heartbeat);
}

/* n PUT_KVs in a row through c, on node fo, each answered SUCCESS and
 * applied on fo (values prefix1..prefixn): the virtual ms they took. */
static uint64_t writes_in_a_row(struct sim *s, struct sim_client *c,
                                unsigned fo, const char *prefix, unsigned n)
{
    uint64_t t0 = sim_now(s);
    for (unsigned i = 1; i <= n; i++) {
        char v[16];
        snprintf(v, sizeof v, "%s%u", prefix, i);
        int32_t op = sim_send_kv_put(c, "k", v);
        sim_expect_code(c, op, NS_CODE_SUCCESS);
        sim_assert_kv(s, fo, "k", v);
    }
    return sim_now(s) - t0;
}

/* A write through a follower does not wait for the leader's next heartbeat:
 * the leader's commit notice (docs/raft-0.15.md §14) tells the forwarding
 * follower. With a heartbeat of 1 s (virtual time) five writes in a row take
 * less than one heartbeat interval in all; each waits for a heartbeat without
 * the notice. */
static void test_follower_write_needs_no_heartbeat(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    const unsigned heartbeat = 1000;
    use_heartbeat(s, heartbeat);
    unsigned fo = sim_follower(s, l, 0);
    struct sim_client *c = sim_client(s, fo);
    uint64_t took = writes_in_a_row(s, c, fo, "n", 5);
    if (took >= heartbeat) {
        fail_msg("5 writes through follower %u took %llu ms of virtual time "
                 "(heartbeat %u ms): they waited for heartbeats",
                 fo, (unsigned long long)took, heartbeat);
    }
    assert_int_equal((int)ns_node_leader_id(s->nodes[fo].node),
                     (int)s->nodes[l].id);
}

/* The commit notice does not wait for the forwarding follower to
 * acknowledge the leader's whole log: with that follower's answers to the
 * leader 400 ms late (virtual time) and a heartbeat of 1 s, the other
 * follower's answers commit each write, and five writes in a row through the
 * slow one take less than half their answers' delays (about 100 ms each);
 * each waits for its own answer to reach the leader when notices wait for it
 * (mutant notice-acked). */
static void test_follower_write_needs_not_its_own_answer(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    const unsigned heartbeat = 1000, answer_delay = 400, writes = 5;
    use_heartbeat(s, heartbeat);
    l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    raft_fixture_set_network_latency(&s->f, fo, answer_delay);
    struct sim_client *c = sim_client(s, fo);
    /* The first write may find the leader probing fo, which waits for fo's
     * answer whatever the notices do. */
    sim_expect_code(c, sim_send_kv_put(c, "k", "s0"), NS_CODE_SUCCESS);
    uint64_t took = writes_in_a_row(s, c, fo, "s", writes);
    if (took >= writes * answer_delay / 2) {
        fail_msg("%u writes through follower %u took %llu ms of virtual time "
                 "(its answers take %u ms): they waited for them",
                 writes, fo, (unsigned long long)took, answer_delay);
    }
    assert_int_equal((int)ns_node_leader_id(s->nodes[fo].node),
                     (int)s->nodes[l].id);
}

/* A forwarding follower whose disk is slow stores each write after the
 * other followers' answers committed it, so the leader's first notice can
 * come before it holds the entry; the notice after its own answer makes it
 * apply, so five writes in a row still take less than one heartbeat. */
static void test_follower_with_a_slow_disk_needs_no_heartbeat(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    const unsigned heartbeat = 1000, disk = 100, writes = 5;
    use_heartbeat(s, heartbeat);
    l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    raft_fixture_set_disk_latency(&s->f, fo, disk);
    struct sim_client *c = sim_client(s, fo);
    uint64_t took = writes_in_a_row(s, c, fo, "d", writes);
    if (took >= heartbeat) {
        fail_msg("%u writes through follower %u (disk %u ms) took %llu ms of "
                 "virtual time (heartbeat %u ms): they waited for heartbeats",
                 writes, fo, disk, (unsigned long long)took, heartbeat);
    }
}

/* Identical registrations through three connections of followers at once
 * (a broker that registers with every name server) share one log entry:
 * every node applies one REGISTER_BROKER, and every sender gets SUCCESS. */
static void test_three_identical_registrations_make_one_entry(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c[3];
    for (unsigned k = 0; k < 3; k++) {
        /* three nodes' followers on 5; on 3, the second follower twice */
        c[k] = sim_client(s, sim_follower(s, l, k % (s->n - 1)));
    }
    int32_t op[3];
    for (unsigned k = 0; k < 3; k++) {
        op[k] = sim_send_register(c[k], "broker-a", "10.1.0.1:10911", 0);
    }
    for (unsigned k = 0; k < 3; k++) {
        sim_expect_code(c[k], op[k], NS_CODE_SUCCESS);
    }
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(sim_n_applied(s, i, NS_CMD_REGISTER_BROKER, false), 1);
        assert_int_equal(ns_route_n_brokers(s->nodes[i].state.route), 1);
    }
}

/* A broker registers with the leader, then with a follower whose disk is
 * slow, before that follower applied the first: the follower forwards it,
 * and the leader, whose state already holds it exactly, answers without an
 * entry; the follower answers once it applied the first registration. */
static void test_registration_applied_a_moment_ago(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    raft_fixture_set_disk_latency(&s->f, fo, 300);
    struct sim_client *cl = sim_client(s, l);
    struct sim_client *cf = sim_client(s, fo);
    int32_t op = sim_send_register(cl, "broker-a", "10.1.0.1:10911", 0);
    sim_expect_code(cl, op, NS_CODE_SUCCESS);
    assert_int_equal(ns_route_n_brokers(s->nodes[fo].state.route), 0);
    op = sim_send_register(cf, "broker-a", "10.1.0.1:10911", 0);
    sim_expect_code(cf, op, NS_CODE_SUCCESS);
    assert_int_equal(ns_route_n_brokers(s->nodes[fo].state.route), 1);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(sim_n_applied(s, i, NS_CMD_REGISTER_BROKER, false), 1);
    }
}

struct grew {
    unsigned node;
    uint64_t index;
};

static bool log_grew(struct sim *s, void *arg)
{
    struct grew *g = arg;
    return raft_last_index(raft_fixture_get(&s->f, g->node)) > g->index;
}

/* The leader dies with the forwarded write in its log, before it committed
 * it: the follower sends it again (same request id) to the next leader. The
 * client gets SUCCESS, and every living node applied the write once. */
static void test_leader_lost_mid_forward(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    struct sim_client *c = sim_client(s, fo);
    struct grew g = {l, raft_last_index(raft_fixture_get(&s->f, l))};
    int32_t op = sim_send_kv_put(c, "k", "v1");
    assert_true(sim_run_until(s, log_grew, &g, 1000));
    uint64_t before = ns_node_last_applied(s->nodes[l].node);
    sim_kill(s, l);
    sim_expect_code(c, op, NS_CODE_SUCCESS);
    assert_true(ns_node_last_applied(s->nodes[fo].node) > before);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        if (i == l) {
            continue;
        }
        sim_assert_kv(s, i, "k", "v1");
        assert_int_equal(sim_n_applied(s, i, NS_CMD_KV_PUT, true), 1);
    }
}

struct applied_on {
    unsigned node;
    const char *key;
};

static bool kv_applied(struct sim *s, void *arg)
{
    struct applied_on *a = arg;
    return sim_kv(s, a->node, a->key) != NULL;
}

/* The leader applies a forwarded write but its answer is lost; the leader
 * then dies. The follower's resend reaches the next leader with the same
 * request id: its entry is a DUPLICATE, so the write takes effect once
 * (docs/exactly-once.md), and the client gets SUCCESS. */
static void test_lost_answer_is_applied_once(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    unsigned other = sim_follower(s, l, 1);
    struct sim_client *c = sim_client(s, fo);
    s->drop_forward_replies = 1;
    int32_t first = sim_send_kv_put(c, "k", "v1");
    struct applied_on a = {other, "k"};
    assert_true(sim_run_until(s, kv_applied, &a, 2000));
    assert_int_equal(s->drop_forward_replies, 0); /* the answer was lost */
    assert_null(sim_find_reply(c, first));
    sim_kill(s, l);
    sim_expect_code(c, first, NS_CODE_SUCCESS);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        if (i == l) {
            continue;
        }
        sim_assert_kv(s, i, "k", "v1");
        /* two entries (the first and the resend), one applied */
        assert_int_equal(sim_n_applied(s, i, NS_CMD_KV_PUT, false), 2);
        assert_int_equal(sim_n_applied(s, i, NS_CMD_KV_PUT, true), 1);
    }
}

struct no_leader {
    unsigned node;
};

static bool lost_leader(struct sim *s, void *arg)
{
    struct no_leader *n = arg;
    return ns_node_leader_id(s->nodes[n->node].node) == 0;
}

/* A follower cut off from every other node takes a write: it waits (no
 * answer, nothing applied anywhere) while the majority goes on writing, and
 * is applied and answered once the partition heals within the write wait. */
static void test_partitioned_follower(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    unsigned other = sim_follower(s, l, 1);
    struct sim_client *c = sim_client(s, fo);
    struct sim_client *c2 = sim_client(s, other);
    sim_cut(s, fo);
    int32_t op = sim_send_kv_put(c, "cut", "v1");
    int32_t op2 = sim_send_kv_put(c2, "majority", "v2");
    sim_expect_code(c2, op2, NS_CODE_SUCCESS);
    struct no_leader nl = {fo};
    assert_true(sim_run_until(s, lost_leader, &nl, 2500));
    assert_null(sim_find_reply(c, op));
    for (unsigned i = 0; i < s->n; i++) {
        assert_null(sim_kv(s, i, "cut"));
    }
    sim_heal(s, fo);
    sim_expect_code(c, op, NS_CODE_SUCCESS);
    sim_assert_kv(s, fo, "majority", "v2");
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "cut", "v1");
        assert_int_equal(sim_n_applied(s, i, NS_CMD_KV_PUT, true), 2);
    }
}

/* Cut off for longer than the write wait: the write is refused with an
 * error, and nothing was applied (it never left the follower). */
static void test_partition_longer_than_the_write_wait(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    struct sim_client *c = sim_client(s, fo);
    sim_cut(s, fo);
    int32_t op = sim_send_kv_put(c, "cut", "v1");
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(c, op, 10000, &reply));
    assert_int_equal(reply.code, NS_CODE_SYSTEM_ERROR);
    ns_cmd_close(&reply);
    sim_heal(s, fo);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_null(sim_kv(s, i, "cut"));
    }
}

/* A write taken by a leader that is then cut off: it cannot commit, the
 * leader steps down, and the client is told the outcome is unknown (not
 * SUCCESS); the majority elects another leader and goes on. */
static void test_write_on_a_leader_that_loses_leadership(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, l);
    sim_cut(s, l);
    int32_t op = sim_send_kv_put(c, "k", "v");
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(c, op, 10000, &reply));
    assert_int_equal(reply.code, NS_CODE_SYSTEM_ERROR);
    assert_non_null(reply.remark);
    assert_non_null(strstr(reply.remark, "unknown"));
    ns_cmd_close(&reply);
    sim_heal(s, l);
    unsigned nl = sim_settle(s);
    struct sim_client *c2 = sim_client(s, nl);
    op = sim_send_kv_put(c2, "k2", "v2");
    sim_expect_code(c2, op, NS_CODE_SUCCESS);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "k2", "v2");
    }
}

/* An earlier process of the follower ran with a later clock: its recorded
 * request-id run is ahead of the follower's own. The follower's next write
 * moves past it and is applied, not refused as stale (docs/exactly-once.md).
 * The record is put into every state directly, as the same applied entry
 * would. */
static void test_write_after_the_clock_went_back(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    struct ns_command c;
    ns_command_init(&c, NS_CMD_KV_PUT);
    c.leader_time_ms = 1;
    c.u.kv.ns = "sim";
    c.u.kv.key = "old";
    c.u.kv.value = "from the future";
    c.reqid.origin = s->nodes[fo].id;
    c.reqid.run = UINT64_MAX - 1;
    c.reqid.seq = 7;
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(ns_fsm_apply(&s->nodes[i].state, &c, NULL), 0);
    }
    struct sim_client *cl = sim_client(s, fo);
    int32_t op = sim_send_kv_put(cl, "k", "after");
    sim_expect_code(cl, op, NS_CODE_SUCCESS);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "k", "after");
        const struct ns_reqid_origin *o =
            ns_reqid_find(&s->nodes[i].state.reqids, s->nodes[fo].id);
        assert_non_null(o);
        assert_true(o->run == UINT64_MAX);
    }
}

/* A copy older than the window of request ids the cluster remembers (its
 * node sent NS_REQID_WINDOW newer writes meanwhile) is refused, not applied:
 * the client is told so. The newer writes are put into every state directly,
 * as their applied entries would. */
static void test_stale_copy_is_refused(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    struct sim_client *c = sim_client(s, fo);
    int32_t op = sim_send_kv_put(c, "k", "first");
    sim_expect_code(c, op, NS_CODE_SUCCESS);
    sim_settle(s);
    const struct ns_reqid_origin *o =
        ns_reqid_find(&s->nodes[l].state.reqids, s->nodes[fo].id);
    assert_non_null(o);
    struct ns_command later;
    ns_command_init(&later, NS_CMD_KV_PUT);
    later.leader_time_ms = 1;
    later.u.kv.ns = "sim";
    later.u.kv.key = "k";
    later.u.kv.value = "later";
    later.reqid.origin = s->nodes[fo].id;
    later.reqid.run = o->run;
    later.reqid.seq = o->high + 2 * NS_REQID_WINDOW;
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(ns_fsm_apply(&s->nodes[i].state, &later, NULL), 0);
    }
    op = sim_send_kv_put(c, "k", "stale");
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(c, op, 10000, &reply));
    assert_int_equal(reply.code, NS_CODE_SYSTEM_ERROR);
    assert_non_null(reply.remark);
    assert_non_null(strstr(reply.remark, "stale"));
    ns_cmd_close(&reply);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "k", "later");
    }
}

/* One run of a failover under writes, as a trace: the virtual time and the
 * applied index of every reply, and what each node applied. */
static uint64_t failover_trace(unsigned n)
{
    struct sim *s = sim_fixture_new(n, n, NULL);
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, sim_follower(s, l, 0));
    uint64_t h = 1469598103934665603u; /* FNV-1a over the trace */
    for (int k = 0; k < 6; k++) {
        char key[8];
        snprintf(key, sizeof key, "k%d", k);
        int32_t op = sim_send_kv_put(c, key, "v");
        if (k == 2) {
            sim_kill(s, l);
        }
        struct ns_cmd reply;
        struct sim_reply *r = sim_wait_reply(c, op, 30000, &reply);
        assert_non_null(r);
        uint64_t v[3] = {sim_now(s), r->applied, (uint64_t)reply.code};
        ns_cmd_close(&reply);
        for (size_t b = 0; b < sizeof v; b++) {
            h = (h ^ ((const uint8_t *)v)[b]) * 1099511628211u;
        }
    }
    for (unsigned i = 0; i < s->n; i++) {
        h = (h ^ s->nodes[i].n_applied) * 1099511628211u;
        h = (h ^ ns_node_last_applied(s->nodes[i].node)) * 1099511628211u;
    }
    h = (h ^ s->seq) * 1099511628211u;
    sim_teardown(s);
    free(s);
    return h;
}

/* The simulation is deterministic: the same scenario twice gives the same
 * schedule (every reply at the same virtual time, every node the same log),
 * so a failing run can be replayed exactly. */
static void test_schedule_is_deterministic(void **state)
{
    (void)state;
    assert_true(failover_trace(3) == failover_trace(3));
    assert_true(failover_trace(5) == failover_trace(5));
    assert_true(failover_trace(3) != failover_trace(5));
}

#define BOTH(test)                                                             \
    cmocka_unit_test_setup_teardown(test, sim_fixture_setup3,                  \
                                    sim_fixture_teardown),                     \
        cmocka_unit_test_setup_teardown(test, sim_fixture_setup5,              \
                                        sim_fixture_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_write_through_a_follower),
        BOTH(test_follower_write_needs_no_heartbeat),
        BOTH(test_follower_write_needs_not_its_own_answer),
        BOTH(test_follower_with_a_slow_disk_needs_no_heartbeat),
        BOTH(test_three_identical_registrations_make_one_entry),
        BOTH(test_registration_applied_a_moment_ago),
        BOTH(test_leader_lost_mid_forward),
        BOTH(test_lost_answer_is_applied_once),
        BOTH(test_partitioned_follower),
        BOTH(test_partition_longer_than_the_write_wait),
        BOTH(test_write_on_a_leader_that_loses_leadership),
        BOTH(test_write_after_the_clock_went_back),
        BOTH(test_stale_copy_is_refused),
        cmocka_unit_test(test_schedule_is_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
