/* Cluster test: standby members (raft RAFT_STANDBY, `member add --role
 * standby`) on the real FSM. Five servers, three voters and two standbys:
 * the standbys replicate every entry and end byte-identical to the voters; a
 * write commits with both standbys and one voter cut off (2 of the 3 voters);
 * it does not commit while only the leader and the two standbys are connected
 * (the standbys do not count), and commits once a second voter is back. */
#include "fixture_util.h"

#define N_CMDS 40

static struct fx x; /* static: zeroed (P6) */

/* fx_setup with the first n_voting servers voters and the rest standbys. */
static void setup_with_standbys(unsigned n, unsigned n_voting)
{
    struct raft_configuration conf;
    memset(&x, 0, sizeof x);
    ns_log_threshold = NS_LOG_WARN;
    x.n = n;
    x.mitigate = true;
    assert_int_equal(raft_fixture_initialize(&x.f), 0);
    for (unsigned i = 0; i < n; i++) {
        struct fx_server *s = &x.s[i];
        assert_int_equal(ns_state_init(&s->state), 0);
        ns_fsm_adapter_init(&s->fa, &s->state, &s->dv, NULL);
        assert_int_equal(raft_fixture_grow(&x.f, &s->fa.fsm), 0);
        ns_fsm_adapter_bind(&s->fa, raft_fixture_get(&x.f, i));
    }
    /* raft_fixture_configuration makes the servers after n_voting standbys */
    assert_int_equal(raft_fixture_configuration(&x.f, n_voting, &conf), 0);
    for (unsigned i = n_voting; i < n; i++) {
        assert_int_equal(conf.servers[i].role, RAFT_STANDBY);
    }
    assert_int_equal(raft_fixture_bootstrap(&x.f, &conf), 0);
    raft_configuration_close(&conf);
    assert_int_equal(raft_fixture_start(&x.f), 0);
    raft_fixture_hook(&x.f, fx_hook);
}

/* Only the servers in `in` talk to each other; every other link is cut. */
static void connect_only(const bool in[5])
{
    for (unsigned i = 0; i < 5; i++) {
        for (unsigned j = 0; j < 5; j++) {
            if (i == j) {
                continue;
            }
            if (in[i] && in[j]) {
                raft_fixture_reconnect(&x.f, i, j);
            } else {
                raft_fixture_disconnect(&x.f, i, j);
            }
        }
    }
}

static unsigned other_voter(unsigned leader, unsigned skip)
{
    for (unsigned i = 0; i < 3; i++) {
        if (i != leader && i != skip) {
            return i;
        }
    }
    fail();
    return 0;
}

static void test_standbys_replicate_and_do_not_count(void **state)
{
    (void)state;
    uint64_t st = fx_seed("standby");
    setup_with_standbys(5, 3);
    unsigned l = fx_wait_leader(&x, 10000);
    assert_true(l < 3); /* a standby never leads */

    struct ns_state ref;
    assert_int_equal(ns_state_init(&ref), 0);
    for (unsigned i = 0; i < N_CMDS; i++) {
        struct ns_command c;
        fx_cmd_random(&c, &st);
        assert_int_equal(fx_apply_sync(&x, &c, 10000), 0);
        assert_int_equal(ns_fsm_apply(&ref, &c, NULL), 0);
        ns_command_close(&c);
    }
    struct ns_buf all;
    fx_assert_converged(&x, &all); /* all five, standbys included */
    fx_assert_equals_state(&all, &ref);
    ns_buf_close(&all);
    assert_true(x.s[3].fa.n_applies >= N_CMDS);
    assert_true(x.s[4].fa.n_applies >= N_CMDS);

    /* both standbys and one voter cut off: 2 of 3 voters commit */
    l = fx_wait_leader(&x, 10000);
    unsigned v1 = other_voter(l, 3);
    unsigned v2 = other_voter(l, v1);
    bool in[5] = {false, false, false, false, false};
    in[l] = in[v2] = true;
    connect_only(in);
    struct ns_command c;
    fx_cmd_kv(&c, "sb", "with-standbys-out", "1");
    assert_int_equal(fx_apply_sync(&x, &c, 10000), 0);
    assert_int_equal(ns_fsm_apply(&ref, &c, NULL), 0);
    ns_command_close(&c);

    /* only the leader and the two standbys: no majority of voters. Shorter
     * than an election timeout, so the leader stays and keeps the entry. */
    in[v2] = false;
    in[3] = in[4] = true;
    connect_only(in);
    struct fx_req r;
    fx_cmd_kv(&c, "sb", "needs-a-voter", "1");
    assert_int_equal(fx_submit(&x, l, &c, &r), 0);
    raft_fixture_step_until(&x.f, fx_stop_done, &r, 600);
    assert_false(r.done); /* the standbys have it, but do not count */
    raft_index pending = raft_last_index(fx_raft(&x, l));
    assert_true(raft_fixture_step_until_applied(&x.f, 3, pending - 1, 300));
    assert_true(fx_raft(&x, l)->commit_index < pending);
    assert_true(raft_last_index(fx_raft(&x, 3)) >= pending); /* replicated */

    /* a second voter back: it commits */
    in[v2] = true;
    connect_only(in);
    assert_true(raft_fixture_step_until(&x.f, fx_stop_done, &r, 10000));
    if (r.status == 0) {
        assert_int_equal(ns_fsm_apply(&ref, &c, NULL), 0);
    }
    ns_command_close(&c);
    in[v1] = true;
    connect_only(in);
    fx_assert_converged(&x, &all);
    if (r.status != 0) {
        /* leadership was lost meanwhile (RAFT_LEADERSHIPLOST: outcome
         * unknown); the replicas agree either way, the reference cannot */
        ns_buf_close(&all);
    } else {
        fx_assert_equals_state(&all, &ref);
        ns_buf_close(&all);
    }
    ns_state_close(&ref);
    fx_teardown(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_standbys_replicate_and_do_not_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
