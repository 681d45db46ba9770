/* Cluster test: a 3-server raft_fixture running the real state machine takes a
 * seeded stream of 500 mixed commands (8 in flight) under random network and
 * disk latency and low snapshot thresholds; every replica must end
 * byte-identical to a reference state that applied the same commands in order.
 * It does not change leaders (test_fixture_failover.c does). */
#include "fixture_util.h"

#define N_CMDS 500
#define IN_FLIGHT 8

static struct fx x; /* static: zeroed (P6) */
static struct fx_req reqs[N_CMDS];
static struct ns_command cmds[N_CMDS];

static unsigned count_pending(unsigned lo, unsigned hi)
{
    unsigned n = 0;
    for (unsigned i = lo; i < hi; i++) {
        n += reqs[i].pending ? 1 : 0;
    }
    return n;
}

static void test_converge_mixed_stream(void **state)
{
    (void)state;
    uint64_t st = fx_seed("converge");
    fx_setup(&x, 3, true);
    for (unsigned i = 0; i < 3; i++) {
        raft_set_snapshot_threshold(fx_raft(&x, i), 64);
        raft_set_snapshot_trailing(fx_raft(&x, i), 16);
    }
    unsigned l = fx_wait_leader(&x, 10000);
    assert_true(l < 3);

    struct ns_state ref;
    assert_int_equal(ns_state_init(&ref), 0);
    for (unsigned i = 0; i < N_CMDS; i++) {
        fx_cmd_random(&cmds[i], &st);
    }
    /* The last one is known content checked below. */
    /* Two topics: a new broker with exactly one fails (Java's guard). */
    const char *final_topics[] = {"FinalTopic", "FinalTopic2"};
    ns_command_close(&cmds[N_CMDS - 1]);
    fx_cmd_register(&cmds[N_CMDS - 1], "DefaultCluster", "broker-final", 0,
                    "10.0.1.1:10911", 1, final_topics, 2);

    unsigned next = 0, lo = 0;
    while (lo < N_CMDS) {
        if (next % 50 == 0) {
            for (unsigned i = 0; i < 3; i++) {
                raft_fixture_set_network_latency(&x.f, i,
                                                 1 + fx_rand_below(&st, 90));
                raft_fixture_set_disk_latency(&x.f, i,
                                              1 + fx_rand_below(&st, 20));
            }
        }
        if (next < N_CMDS && next - lo < IN_FLIGHT) {
            assert_int_equal(fx_submit(&x, l, &cmds[next], &reqs[next]), 0);
            next++;
            continue;
        }
        raft_fixture_step(&x.f);
        while (lo < next && reqs[lo].done) {
            assert_int_equal(reqs[lo].status, 0);
            lo++;
        }
        assert_true(raft_fixture_time(&x.f) < 600000);
    }
    assert_int_equal(count_pending(0, N_CMDS), 0);
    assert_int_equal(raft_state(fx_raft(&x, l)), RAFT_LEADER);

    for (unsigned i = 0; i < N_CMDS; i++) {
        assert_int_equal(ns_fsm_apply(&ref, &cmds[i], NULL), 0);
        ns_command_close(&cmds[i]);
    }
    struct ns_buf all, want, route0;
    fx_assert_converged(&x, &all);
    ns_buf_init(&want);
    assert_int_equal(ns_snapshot_encode(&ref, &want), 0);
    assert_int_equal(all.len, want.len);
    assert_memory_equal(all.data, want.data, want.len);

    assert_int_equal(fx_route(&x, 0, "FinalTopic", &route0), 0);
    assert_non_null(memmem(route0.data, route0.len, "10.0.1.1:10911", 14));
    for (unsigned i = 1; i < 3; i++) {
        struct ns_buf r;
        assert_int_equal(fx_route(&x, i, "FinalTopic", &r), 0);
        assert_int_equal(r.len, route0.len);
        assert_memory_equal(r.data, route0.data, r.len);
        ns_buf_close(&r);
    }
    unsigned snaps = 0;
    for (unsigned i = 0; i < 3; i++) {
        snaps += x.s[i].fa.n_snapshots;
    }
    assert_true(snaps > 0); /* snapshots were taken along the way */

    ns_buf_close(&route0);
    ns_buf_close(&want);
    ns_buf_close(&all);
    ns_state_close(&ref);
    fx_teardown(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_converge_mixed_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
