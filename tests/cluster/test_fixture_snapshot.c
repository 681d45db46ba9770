/* Cluster test: snapshot install to a lagging node. With a snapshot threshold
 * of 32 and 8 trailing entries, one follower is cut off while 200 seeded mixed
 * commands commit; reconnected, it can only catch up through InstallSnapshot
 * (our ns_snapshot_decode in restore) and must end byte-identical to the
 * others and to a reference state. */
#include "fixture_util.h"

#define N_CMDS 200

static struct fx x; /* static: zeroed (P6) */
static struct ns_command cmds[N_CMDS];
static struct fx_req reqs[N_CMDS];
static bool acked[N_CMDS];

static void test_snapshot_install_to_lagging_node(void **state)
{
    (void)state;
    uint64_t st = fx_seed("snapshot_install");
    memset(reqs, 0, sizeof reqs);
    memset(acked, 0, sizeof acked);
    fx_setup(&x, 3, true);
    for (unsigned i = 0; i < 3; i++) {
        raft_set_snapshot_threshold(fx_raft(&x, i), 32);
        raft_set_snapshot_trailing(fx_raft(&x, i), 8);
        raft_fixture_set_network_latency(&x.f, i, 5 + fx_rand_below(&st, 30));
    }
    unsigned l = fx_wait_leader(&x, 10000);
    assert_true(l < 3);
    unsigned lag = (l + 1) % 3;
    raft_index lag_before = raft_last_index(fx_raft(&x, lag));
    fx_isolate(&x, lag, true);

    for (unsigned i = 0; i < N_CMDS; i++) {
        fx_cmd_random(&cmds[i], &st);
    }
    struct fx_stream s = {cmds, reqs, acked, N_CMDS, 8, 0, 0, 0, NULL};
    fx_stream_run(&x, &s, 120000);
    assert_int_equal(s.n_lost, 0); /* one leader throughout: order kept */
    assert_int_equal(raft_last_index(fx_raft(&x, lag)), lag_before);
    assert_int_equal(x.s[lag].fa.n_restores, 0);
    assert_true(x.s[l].fa.n_snapshots >= N_CMDS / 32 - 1);

    fx_isolate(&x, lag, false);
    struct ns_buf all;
    fx_assert_converged(&x, &all);
    assert_true(x.s[lag].fa.n_restores >= 1); /* caught up by InstallSnapshot */
    assert_true(x.s[lag].fa.n_applies < N_CMDS); /* not entry by entry */

    struct ns_state ref;
    assert_int_equal(ns_state_init(&ref), 0);
    for (unsigned i = 0; i < N_CMDS; i++) {
        assert_int_equal(ns_fsm_apply(&ref, &cmds[i], NULL), 0);
        ns_command_close(&cmds[i]);
    }
    fx_assert_equals_state(&all, &ref);

    /* The restored node keeps applying normally afterwards. */
    struct ns_command c;
    const char *ts[2] = {"AfterSnap", "AfterSnap2"};
    fx_cmd_register(&c, "DefaultCluster", "broker-late", 0, "10.0.9.9:10911", 1,
                    ts, 2);
    assert_int_equal(fx_apply_sync(&x, &c, 10000), 0);
    assert_int_equal(ns_fsm_apply(&ref, &c, NULL), 0);
    ns_command_close(&c);
    ns_buf_close(&all);
    fx_assert_converged(&x, &all);
    fx_assert_equals_state(&all, &ref);
    struct ns_buf r;
    assert_int_equal(fx_route(&x, lag, "AfterSnap", &r), 0);
    assert_non_null(memmem(r.data, r.len, "10.0.9.9:10911", 14));
    ns_buf_close(&r);

    ns_buf_close(&all);
    ns_state_close(&ref);
    fx_teardown(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_install_to_lagging_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
