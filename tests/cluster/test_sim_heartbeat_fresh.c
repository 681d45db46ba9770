/* An acknowledged heartbeat keeps its broker for the broker's timeout, also
 * when a follower acknowledged it (docs/readiness.md, "Unchanged
 * re-registrations"). The fault suite's lost heartbeat: a broker connected
 * only to a follower; the follower is cut from the leader until just before
 * the leader's deadline for the broker; right after the heal the follower
 * answers a heartbeat. Answered from its own table, the leader would hear of
 * it only with the follower's next liveness report, and expire the broker
 * before that report arrives. The leader's scan is driven by the test at the
 * moment that deadline passes, and again every 500 ms: a scan may fire at any
 * time (scanNotActiveBrokerInterval, here set out of the way). The second
 * test is the leader's own table while an expiry of the broker is in flight.
 * Both fail when every node short-cuts as raft contact allows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

#define HBF_ADDR "10.1.0.2:10911"
#define HBF_TIMEOUT_MS 10000u
/* The heartbeat acknowledged after the heal must keep the broker this long:
 * its timeout less what a scan may be late by in virtual time. */
#define HBF_KEEP_MS (HBF_TIMEOUT_MS - 100u)

struct hbf_deadline {
    uint64_t deadline; /* UINT64_MAX: unknown */
};

static void hbf_deadline_one(void *arg, const struct ns_live *e, uint64_t now)
{
    (void)now;
    struct hbf_deadline *d = arg;
    if (strcmp(e->addr, HBF_ADDR) == 0) {
        d->deadline = e->deadline;
    }
}

/* The leader's liveness deadline for the broker. */
static uint64_t hbf_deadline(struct sim *s, unsigned l)
{
    struct hbf_deadline d = {UINT64_MAX};
    ns_liveness_each(&s->nodes[l].server->live, hbf_deadline_one, &d);
    return d.deadline;
}

struct hbf_at_least {
    unsigned l;
    uint64_t min;
};

static bool hbf_deadline_reaches(struct sim *s, void *arg)
{
    struct hbf_at_least *a = arg;
    uint64_t d = hbf_deadline(s, a->l);
    return d != UINT64_MAX && d >= a->min;
}

static bool hbf_contact(struct sim *s, void *arg)
{
    const unsigned *i = arg;
    return ns_node_has_leader_contact(s->nodes[*i].node);
}

static bool hbf_time_reaches(struct sim *s, void *arg)
{
    return sim_now(s) >= *(const uint64_t *)arg;
}

/* The follower's next once-a-second tick (its liveness report) is after t. */
static bool hbf_tick_after(struct sim *s, void *arg)
{
    const uint64_t *t = arg;
    return s->nodes[t[0]].server->next_second_ms > t[1];
}

static void hbf_heartbeat(struct sim_client *c)
{
    int32_t op = sim_send_register(c, "broker-hb", HBF_ADDR, HBF_TIMEOUT_MS);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(c, op, 30000, &reply));
    assert_int_equal(reply.code, NS_CODE_SUCCESS);
    ns_cmd_close(&reply);
}

static void hbf_assert_everywhere(struct sim *s, uint64_t acked)
{
    for (unsigned i = 0; i < s->n; i++) {
        if (ns_route_broker_timeout(s->nodes[i].state.route, "c1", HBF_ADDR) <
            0) {
            fail_msg("node %u: broker gone %llu ms after a heartbeat was "
                     "acknowledged (its timeout is %u ms)",
                     i, (unsigned long long)(sim_now(s) - acked),
                     HBF_TIMEOUT_MS);
        }
    }
}

static void test_follower_ack_after_heal_keeps_broker(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    sim_run_for(s, NS_LIVENESS_TABLE_FAST_SETTLE_MS + 500);
    assert_int_equal(sim_settle(s), l);
    unsigned fo = sim_follower(s, l, 0);
    struct sim_client *cf = sim_client(s, fo);

    hbf_heartbeat(cf); /* the first one registers it (a log entry) */
    sim_settle(s);
    for (int k = 0; k < 3; k++) {
        sim_run_for(s, 1000);
        hbf_heartbeat(cf);
    }
    /* The last heartbeat before the cut lands 400 ms before a report tick of
     * the follower, so the leader's deadline for it falls 600 ms after one:
     * the heal goes right after that tick, and the follower's next report
     * leaves only after the deadline. */
    uint64_t tick[2] = {fo, 0};
    tick[1] = s->nodes[fo].server->next_second_ms;
    uint64_t at = tick[1] - 400;
    assert_true(sim_run_until(s, hbf_time_reaches, &at, 2000));
    uint64_t heard = sim_now(s);
    hbf_heartbeat(cf);
    struct hbf_at_least got = {l, heard + HBF_TIMEOUT_MS};
    assert_true(sim_run_until(s, hbf_deadline_reaches, &got, 3000));

    sim_cut(s, fo);
    uint64_t deadline = hbf_deadline(s, l);
    /* The broker keeps heartbeating to the cut follower, which refuses (no
     * leader): those answers are not waited for. */
    uint64_t heal_from = deadline - 900;
    while (sim_now(s) < heal_from) {
        uint64_t next = sim_now(s) + 1000;
        if (next > heal_from) {
            next = heal_from;
        }
        sim_send_register(cf, "broker-hb", HBF_ADDR, HBF_TIMEOUT_MS);
        assert_true(sim_run_until(s, hbf_time_reaches, &next, 2000));
    }
    tick[1] = deadline;
    assert_true(sim_run_until(s, hbf_tick_after, tick, 1500));
    assert_true(sim_now(s) + 100 < deadline);
    assert_int_equal(ns_node_leader_id(s->nodes[l].node), s->nodes[l].id);
    sim_heal(s, fo);
    assert_true(sim_run_until(s, hbf_contact, &fo, 2000));
    assert_int_equal(ns_node_leader_id(s->nodes[fo].node), s->nodes[l].id);

    int32_t op = sim_send_register(cf, "broker-hb", HBF_ADDR, HBF_TIMEOUT_MS);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(cf, op, 30000, &reply));
    assert_int_equal(reply.code, NS_CODE_SUCCESS);
    ns_cmd_close(&reply);
    uint64_t acked = sim_now(s);

    /* From the acknowledgement on, the broker sends nothing more; the leader
     * scans once its old deadline passed and every 500 ms after. */
    uint64_t next_scan = deadline + 1 > acked ? deadline + 1 : acked;
    while (sim_now(s) < acked + HBF_KEEP_MS) {
        if (sim_now(s) >= next_scan) {
            int cur = sim_leader(s);
            assert_true(cur >= 0);
            ns_liveness_scan(&s->nodes[cur].server->live);
            next_scan = sim_now(s) + 500;
        }
        sim_step(s);
        hbf_assert_everywhere(s, acked);
    }
}

/* The leader's side: a heartbeat reaches the leader after it proposed the
 * broker's expiry and before that expiry applied. The expiry names the
 * registration count the leader saw, which an unchanged registration does not
 * bump: answered from the table, the heartbeat would be undone by the
 * expiry. */
static void test_leader_ack_during_expiry_keeps_broker(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    sim_run_for(s, NS_LIVENESS_TABLE_FAST_SETTLE_MS + 500);
    assert_int_equal(sim_settle(s), l);
    struct sim_client *cl = sim_client(s, l);
    hbf_heartbeat(cl);
    sim_settle(s);
    sim_run_for(s, 1000);
    hbf_heartbeat(cl); /* unchanged: answered from the leader's table */

    uint64_t deadline = hbf_deadline(s, l);
    assert_true(deadline != UINT64_MAX);
    assert_true(sim_run_until(s, hbf_time_reaches, &deadline, 2 * 10000));
    ns_liveness_scan(&s->nodes[l].server->live);
    ns_node_tick(s->nodes[l].node); /* the turn's end hands it to raft */
    /* proposed, not applied: the broker is still in every route */
    struct raft *r = raft_fixture_get(&s->f, l);
    assert_true(raft_last_index(r) > raft_last_applied(r));
    assert_int_equal(sim_n_applied(s, l, NS_CMD_EXPIRE_BROKERS_SEEN, false), 0);
    assert_true(
        ns_route_broker_timeout(s->nodes[l].state.route, "c1", HBF_ADDR) >= 0);

    /* The expiry closed the broker's connection; it connects again. */
    struct sim_client *again = sim_client(s, l);
    hbf_heartbeat(again);
    uint64_t acked = sim_now(s);
    uint64_t next_scan = acked;
    while (sim_now(s) < acked + HBF_KEEP_MS) {
        if (sim_now(s) >= next_scan) {
            int cur = sim_leader(s);
            assert_true(cur >= 0);
            ns_liveness_scan(&s->nodes[cur].server->live);
            next_scan = sim_now(s) + 500;
        }
        sim_step(s);
        hbf_assert_everywhere(s, acked);
    }
    assert_int_equal(sim_n_applied(s, l, NS_CMD_EXPIRE_BROKERS_SEEN, false), 1);
}

static int hbf_setup3(void **state)
{
    struct sim_opts opts = {.settings = "scanNotActiveBrokerInterval=600000\n"};
    *state = sim_fixture_new(3, 3, &opts);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_follower_ack_after_heal_keeps_broker, hbf_setup3,
            sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_leader_ack_during_expiry_keeps_broker, hbf_setup3,
            sim_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
