/* Cluster tests: leader change in the middle of a command stream (the leader is
 * partitioned away or killed and later revived; applies that end with
 * RAFT_LEADERSHIPLOST are resubmitted, commands being idempotent), and a
 * partition in which a minority leader's uncommitted entries are discarded
 * while the majority continues. Every acknowledged command must be in the final
 * state, and every replica byte-identical. Snapshot install is in
 * test_fixture_snapshot.c. */
#include "fixture_util.h"

#define N_CMDS 200
#define DISRUPT_AT 100

static struct fx x; /* static: zeroed (P6) */
static struct ns_command cmds[N_CMDS];
static struct fx_req reqs[N_CMDS];
static bool acked[N_CMDS];

enum disrupt { BY_PARTITION, BY_KILL };

static struct {
    enum disrupt how;
    bool disrupted, healed;
    unsigned old_leader;
    raft_term old_term;
    raft_time at;
    uint64_t rng;
} run;

/* Command i: every 4th registers broker b<i> with topics T<i>a and T<i>b, the
 * others put ns/k<i> = v<i>. They commute, so any order gives one state. */
static void make_cmd(unsigned i, struct ns_command *c)
{
    char name[32], addr[32], t1[32], t2[32], key[32], val[32];
    if (i % 4 == 0) {
        const char *ts[2] = {t1, t2};
        snprintf(name, sizeof name, "b%u", i);
        snprintf(addr, sizeof addr, "10.1.%u.%u:10911", i / 256, i % 256);
        snprintf(t1, sizeof t1, "T%ua", i);
        snprintf(t2, sizeof t2, "T%ub", i);
        fx_cmd_register(c, "DefaultCluster", name, 0, addr, 1, ts, 2);
    } else {
        snprintf(key, sizeof key, "k%u", i);
        snprintf(val, sizeof val, "v%u", i);
        fx_cmd_kv(c, "ns", key, val);
    }
}

static void assert_cmd_present(unsigned server, unsigned i)
{
    char key[32], val[32];
    if (i % 4 == 0) {
        struct ns_buf b;
        snprintf(key, sizeof key, "T%ua", i);
        snprintf(val, sizeof val, "10.1.%u.%u:10911", i / 256, i % 256);
        assert_int_equal(fx_route(&x, server, key, &b), 0);
        assert_non_null(memmem(b.data, b.len, val, strlen(val)));
        ns_buf_close(&b);
    } else {
        snprintf(key, sizeof key, "k%u", i);
        snprintf(val, sizeof val, "v%u", i);
        const char *v = ns_kv_find(x.s[server].state.kv, "ns", key);
        assert_non_null(v);
        assert_string_equal(v, val);
    }
}

static void disrupt_on_step(struct fx *fx, struct fx_stream *s)
{
    if (!run.disrupted && s->n_acked >= DISRUPT_AT &&
        fx_stream_in_flight(s) >= 4) {
        unsigned l = fx_ready_leader(fx);
        assert_true(l < fx->n);
        run.old_leader = l;
        run.old_term = fx_raft(fx, l)->current_term;
        run.at = raft_fixture_time(&fx->f);
        run.disrupted = true;
        if (run.how == BY_KILL) {
            raft_fixture_kill(&fx->f, l);
        } else {
            fx_isolate(fx, l, true);
        }
        return;
    }
    /* Heal once another server leads and some more commands went through, or
     * after 10 s of simulated time at the latest. */
    if (run.disrupted && !run.healed) {
        unsigned l = fx_ready_leader(fx);
        bool moved =
            l < fx->n && l != run.old_leader && s->n_acked >= DISRUPT_AT + 30;
        if (moved || raft_fixture_time(&fx->f) > run.at + 10000) {
            run.healed = true;
            if (run.how == BY_KILL) {
                raft_fixture_revive(&fx->f, run.old_leader);
            } else {
                fx_isolate(fx, run.old_leader, false);
            }
        }
    }
}

static void run_leader_change(enum disrupt how, const char *name)
{
    memset(&run, 0, sizeof run);
    memset(reqs, 0, sizeof reqs);
    memset(acked, 0, sizeof acked);
    run.how = how;
    uint64_t st = fx_seed(name);
    fx_setup(&x, 3, true);
    for (unsigned i = 0; i < 3; i++) {
        raft_fixture_set_network_latency(&x.f, i, 5 + fx_rand_below(&st, 40));
        raft_fixture_set_disk_latency(&x.f, i, 1 + fx_rand_below(&st, 15));
    }
    for (unsigned i = 0; i < N_CMDS; i++) {
        make_cmd(i, &cmds[i]);
    }
    struct fx_stream s = {cmds, reqs, acked, N_CMDS,         8,
                          0,    0,    0,     disrupt_on_step};
    fx_stream_run(&x, &s, 120000);
    printf("%s: %zu submits, %zu lost, old leader %u term %llu\n", name,
           s.n_submits, s.n_lost, run.old_leader,
           (unsigned long long)run.old_term);
    assert_true(run.disrupted && run.healed);
    assert_true(s.n_lost > 0); /* in-flight applies did lose leadership */
    unsigned l = fx_ready_leader(&x);
    assert_true(l < 3);
    assert_true(fx_raft(&x, l)->current_term > run.old_term);

    struct ns_buf all;
    fx_assert_converged(&x, &all);
    struct ns_state ref;
    assert_int_equal(ns_state_init(&ref), 0);
    for (unsigned i = 0; i < N_CMDS; i++) {
        assert_int_equal(ns_fsm_apply(&ref, &cmds[i], NULL), 0);
    }
    fx_assert_equals_state(&all, &ref);
    for (unsigned srv = 0; srv < 3; srv++) {
        for (unsigned i = 0; i < N_CMDS; i++) {
            assert_true(acked[i]);
            assert_cmd_present(srv, i);
        }
    }
    for (unsigned i = 0; i < N_CMDS; i++) {
        ns_command_close(&cmds[i]);
    }
    ns_state_close(&ref);
    ns_buf_close(&all);
    fx_teardown(&x);
}

static void test_leader_partitioned_midstream(void **state)
{
    (void)state;
    run_leader_change(BY_PARTITION, "leader_partitioned");
}

static void test_leader_killed_midstream(void **state)
{
    (void)state;
    run_leader_change(BY_KILL, "leader_killed");
}

/* Partition and heal: the old leader, alone, accepts 5 entries it can never
 * commit; the majority elects a leader and commits 20 more; after healing the
 * 5 are gone everywhere and the 20 are everywhere. */
static void test_partition_and_heal(void **state)
{
    (void)state;
    struct fx_req minority[5];
    struct ns_state ref;
    struct ns_command c;
    char key[32];
    fx_setup(&x, 3, true);
    assert_int_equal(ns_state_init(&ref), 0);
    unsigned l = fx_wait_leader(&x, 10000);
    assert_true(l < 3);
    for (unsigned i = 0; i < 50; i++) {
        snprintf(key, sizeof key, "before%u", i);
        fx_cmd_kv(&c, "ns", key, "x");
        assert_int_equal(fx_apply_sync(&x, &c, 10000), 0);
        assert_int_equal(ns_fsm_apply(&ref, &c, NULL), 0);
        ns_command_close(&c);
    }
    fx_isolate(&x, l, true);
    for (unsigned i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "minority%u", i);
        fx_cmd_kv(&c, "ns", key, "lost");
        assert_int_equal(fx_submit(&x, l, &c, &minority[i]), 0);
        ns_command_close(&c);
    }
    /* The majority elects someone else (the old leader still thinks it
     * leads, so wait for a ready leader other than it). */
    unsigned m = x.n;
    raft_time end = raft_fixture_time(&x.f) + 30000;
    while (m == x.n || m == l) {
        assert_true(raft_fixture_time(&x.f) < end);
        raft_fixture_step(&x.f);
        m = fx_ready_leader(&x);
        if (m == l) {
            m = x.n;
            for (unsigned i = 0; i < 3; i++) {
                if (i != l && fx_is_ready_leader(&x, i)) {
                    m = i;
                }
            }
        }
    }
    for (unsigned i = 0; i < 20; i++) {
        struct fx_req r;
        snprintf(key, sizeof key, "majority%u", i);
        fx_cmd_kv(&c, "ns", key, "kept");
        assert_int_equal(fx_submit(&x, m, &c, &r), 0);
        assert_true(raft_fixture_step_until(&x.f, fx_stop_done, &r, 10000));
        assert_int_equal(r.status, 0);
        assert_int_equal(ns_fsm_apply(&ref, &c, NULL), 0);
        ns_command_close(&c);
    }
    /* The isolated leader steps down: its 5 applies end in LEADERSHIPLOST. */
    for (unsigned i = 0; i < 5; i++) {
        assert_true(
            raft_fixture_step_until(&x.f, fx_stop_done, &minority[i], 30000));
        assert_int_equal(minority[i].status, RAFT_LEADERSHIPLOST);
    }
    assert_true(raft_last_index(fx_raft(&x, l)) >= 5);
    fx_isolate(&x, l, false);

    struct ns_buf all;
    fx_assert_converged(&x, &all);
    fx_assert_equals_state(&all, &ref);
    for (unsigned srv = 0; srv < 3; srv++) {
        for (unsigned i = 0; i < 5; i++) {
            snprintf(key, sizeof key, "minority%u", i);
            assert_null(ns_kv_find(x.s[srv].state.kv, "ns", key));
        }
        for (unsigned i = 0; i < 20; i++) {
            snprintf(key, sizeof key, "majority%u", i);
            assert_non_null(ns_kv_find(x.s[srv].state.kv, "ns", key));
        }
    }
    ns_buf_close(&all);
    ns_state_close(&ref);
    fx_teardown(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leader_partitioned_midstream),
        cmocka_unit_test(test_leader_killed_midstream),
        cmocka_unit_test(test_partition_and_heal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
