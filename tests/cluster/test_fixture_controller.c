/* Cluster tests of the controller on raft_fixture (virtual time): the
 * leader's decisions (raft/controller_decide.c) over its own replica and its
 * own heartbeat table, committed through the log, across leader changes.
 * (1) A master dies after the raft leader changed: the new leader elects the
 * in-sync slave, fences the old master's view (2002 / 2000), and every
 * replica ends byte-identical. (2) A deposed leader's election is never
 * applied: it decided master 2 with epoch 2 but lost the leadership before
 * the entry committed; the new leader decides master 3 with epoch 2, and no
 * replica ever shows two masters for one epoch. Heartbeats reach every node,
 * as brokers send them to every controller address. */
#include "fixture_util.h"

#include "raftns/controller.h"

static struct fx x;                /* static: zeroed (P6) */
static struct ns_ctl_live live[3]; /* each node's heartbeats */

#define B(id)                                                                  \
    ((id) == 1   ? "10.0.0.1:30911"                                            \
     : (id) == 2 ? "10.0.0.2:30911"                                            \
                 : "10.0.0.3:30911")

static int64_t now_ms(void)
{
    return (int64_t)raft_fixture_time(&x.f);
}

/* hb(Bid) on every node. */
static void hb_all(int64_t id, int32_t epoch, int64_t offset)
{
    struct ns_ctl_beat_in in = {"c1",  "broker-a", B(id),  id, 10000,
                                epoch, offset,     offset, 1,  0};
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(ns_ctl_live_beat(&live[i], &in, now_ms()), 0);
    }
}

/* Bid's process died: it is gone from every node's table (its connections
 * closed). */
static void die_all(int64_t id)
{
    for (unsigned i = 0; i < 3; i++) {
        for (size_t k = 0; k < live[i].n; k++) {
            if (live[i].items[k].id == id) {
                live[i].items[k].last_ms = -100000;
            }
        }
        struct ns_ctl_live gone;
        assert_int_equal(ns_ctl_live_expire(&live[i], now_ms(), 0, &gone), 0);
        ns_ctl_live_close(&gone);
    }
}

static enum ns_command_type cmd_type(enum ns_ctl_event_type t)
{
    switch (t) {
    case NS_CTL_EV_ALTER_SYNC_STATE_SET:
        return NS_CMD_CTL_ALTER_SYNC_STATE_SET;
    case NS_CTL_EV_APPLY_BROKER_ID:
        return NS_CMD_CTL_APPLY_BROKER_ID;
    case NS_CTL_EV_ELECT_MASTER:
        return NS_CMD_CTL_ELECT_MASTER;
    case NS_CTL_EV_CLEAN_BROKER_DATA:
        return NS_CMD_CTL_CLEAN_BROKER_DATA;
    case NS_CTL_EV_UPDATE_BROKER_ADDRESS:
        return NS_CMD_CTL_UPDATE_BROKER_ADDRESS;
    }
    fail();
    return NS_CMD_CHECKPOINT;
}

typedef int (*decide_fn)(const struct ns_ctl_view *v,
                         const struct ns_ctl_request *r,
                         struct ns_ctl_decision *d);

/* Decides r on server l against its replica and heartbeats. */
static void decide_on(unsigned l, decide_fn fn, const struct ns_ctl_request *r,
                      struct ns_ctl_decision *d)
{
    struct ns_ctl_view v = {&x.s[l].state.ctl, &live[l], now_ms(), false};
    assert_int_equal(fn(&v, r, d), 0);
}

static void to_command(const struct ns_ctl_decision *d, struct ns_command *c)
{
    ns_command_init(c, cmd_type(d->event_type));
    c->leader_time_ms = FX_T0;
    c->u.ctl = d->event; /* borrowed: c is not closed */
}

/* Decide on the ready leader, commit the event, wait until the leader
 * applied it (the room answers only then). Returns the decision's code. */
static int32_t request(decide_fn fn, const struct ns_ctl_request *r)
{
    unsigned l = fx_wait_leader(&x, 30000);
    assert_true(l < 3);
    struct ns_ctl_decision d;
    decide_on(l, fn, r, &d);
    if (d.has_event) {
        struct ns_command c;
        struct fx_req q;
        to_command(&d, &c);
        assert_int_equal(fx_submit(&x, l, &c, &q), 0);
        assert_true(raft_fixture_step_until(&x.f, fx_stop_done, &q, 10000));
        assert_int_equal(q.status, 0);
    }
    int32_t code = d.code;
    ns_ctl_decision_close(&d);
    return code;
}

static void admit(int64_t id)
{
    char code[64];
    snprintf(code, sizeof code, "%s;1000", B(id));
    struct ns_ctl_request r = {.cluster = "c1",
                               .broker_name = "broker-a",
                               .check_code = code,
                               .has_id = true,
                               .id = id};
    assert_int_equal(request(ns_ctl_decide_apply_id, &r), 0);
}

static int32_t alter(int64_t master, int32_t epoch, const int64_t *ids,
                     size_t n, int32_t sepoch)
{
    struct ns_ctl_request r = {.broker_name = "broker-a",
                               .has_id = true,
                               .id = master,
                               .has_master_epoch = true,
                               .master_epoch = epoch,
                               .ids = ids,
                               .n_ids = n,
                               .set_epoch = sepoch};
    return request(ns_ctl_decide_alter, &r);
}

static const struct ns_ctl_group *group_on(unsigned i)
{
    return ns_ctl_find(&x.s[i].state.ctl, "broker-a");
}

/* Steps until a ready leader other than old; returns it. */
static unsigned wait_other_leader(unsigned old)
{
    raft_time end = raft_fixture_time(&x.f) + 30000;
    for (;;) {
        assert_true(raft_fixture_time(&x.f) < end);
        raft_fixture_step(&x.f);
        for (unsigned i = 0; i < 3; i++) {
            if (i != old && fx_is_ready_leader(&x, i)) {
                return i;
            }
        }
    }
}

static int setup(void **state)
{
    (void)state;
    fx_setup(&x, 3, true);
    memset(live, 0, sizeof live);
    assert_true(fx_wait_leader(&x, 30000) < 3);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fx_teardown(&x);
    for (unsigned i = 0; i < 3; i++) {
        ns_ctl_live_close(&live[i]);
    }
    return 0;
}

/* B1 master of S = {1,2} (epochs 1 and 2), B3 admitted, all heartbeating. */
static void three_brokers(void)
{
    admit(1);
    admit(2);
    admit(3);
    hb_all(1, 0, 10);
    hb_all(2, 0, 10);
    hb_all(3, 0, 50); /* ahead of B2, but not in S */
    struct ns_ctl_request r = {
        .cluster = "c1", .broker_name = "broker-a", .has_id = true, .id = 1};
    assert_int_equal(request(ns_ctl_decide_elect, &r), 0);
    static const int64_t s12[] = {1, 2};
    assert_int_equal(alter(1, 1, s12, 2, 1), 0);
}

static void test_failover_after_leader_change(void **state)
{
    (void)state;
    three_brokers();
    unsigned l = fx_ready_leader(&x);
    raft_fixture_kill(&x.f, l);
    unsigned m = wait_other_leader(l);
    /* The new leader's replica has the whole table, and B1 dies now. */
    assert_int_equal(group_on(m)->master_id, 1);
    die_all(1);
    struct ns_ctl_request trig = {.broker_name = "broker-a", .cluster = ""};
    assert_int_equal(request(ns_ctl_decide_elect, &trig), 0);
    const struct ns_ctl_group *g = group_on(m);
    assert_int_equal(g->master_id, 2); /* in S and alive; B3 is not in S */
    assert_int_equal(g->master_epoch, 2);
    assert_int_equal(g->sync_epoch, 3);
    /* The old master's view is fenced by the new leader. */
    static const int64_t s12[] = {1, 2};
    assert_int_equal(alter(1, 1, s12, 2, 2), NS_CODE_CONTROLLER_INVALID_MASTER);
    assert_int_equal(alter(2, 1, s12, 2, 3),
                     NS_CODE_CONTROLLER_FENCED_MASTER_EPOCH);
    assert_int_equal(alter(2, 2, s12, 2, 2),
                     NS_CODE_CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH);
    raft_fixture_revive(&x.f, l);
    struct ns_buf all;
    fx_assert_converged(&x, &all);
    ns_buf_close(&all);
    for (unsigned i = 0; i < 3; i++) {
        g = group_on(i);
        assert_int_equal(g->master_id, 2);
        assert_int_equal(g->master_epoch, 2);
        assert_int_equal(g->n_sync, 1);
    }
}

static void test_deposed_leader_election_never_applies(void **state)
{
    (void)state;
    three_brokers();
    static const int64_t s123[] = {1, 2, 3};
    assert_int_equal(alter(1, 1, s123, 3, 2), 0);
    unsigned l = fx_ready_leader(&x);
    /* The leader is cut off; on its side B1 dies and B2 looks best. */
    fx_isolate(&x, l, true);
    die_all(1);
    hb_all(2, 1, 100);
    hb_all(3, 0, 50);
    struct ns_ctl_request trig = {.broker_name = "broker-a", .cluster = ""};
    struct ns_ctl_decision d;
    decide_on(l, ns_ctl_decide_elect, &trig, &d);
    assert_true(d.has_event && d.event.elected);
    assert_int_equal(d.event.id, 2);
    assert_int_equal(d.reply.master_epoch, 2);
    struct ns_command c;
    struct fx_req lost;
    to_command(&d, &c);
    assert_int_equal(fx_submit(&x, l, &c, &lost), 0);
    ns_ctl_decision_close(&d);
    /* The majority's leader sees B3 ahead by then and elects it. */
    unsigned m = wait_other_leader(l);
    hb_all(3, 2, 200);
    struct ns_ctl_decision d2;
    decide_on(m, ns_ctl_decide_elect, &trig, &d2);
    assert_true(d2.has_event && d2.event.elected);
    assert_int_equal(d2.event.id, 3);
    assert_int_equal(d2.reply.master_epoch, 2); /* the same epoch number */
    struct fx_req won;
    to_command(&d2, &c);
    assert_int_equal(fx_submit(&x, m, &c, &won), 0);
    assert_true(raft_fixture_step_until(&x.f, fx_stop_done, &won, 10000));
    assert_int_equal(won.status, 0);
    ns_ctl_decision_close(&d2);
    /* The deposed leader's entry ends without being applied anywhere: no
     * reply would go out for it. */
    assert_true(raft_fixture_step_until(&x.f, fx_stop_done, &lost, 30000));
    assert_int_not_equal(lost.status, 0);
    assert_int_equal(group_on(l)->master_id, 1); /* never applied there */
    fx_isolate(&x, l, false);
    struct ns_buf all;
    fx_assert_converged(&x, &all);
    ns_buf_close(&all);
    for (unsigned i = 0; i < 3; i++) {
        const struct ns_ctl_group *g = group_on(i);
        assert_int_equal(g->master_id, 3);
        assert_int_equal(g->master_epoch, 2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_failover_after_leader_change,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_deposed_leader_election_never_applies, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
