/* Cluster test: divergence by majority (docs/divergence.md) on 3 servers
 * running the real FSM and raft/diverge.c. The test plays the messaging that
 * src/cluster/verdict.c and recovery.c do over the client port: after each
 * CHECKPOINT it hands every server's unjudged digests to the leader's tally,
 * proposes the VERDICT the tally decides, makes a diverged leader transfer
 * leadership to the voter the verdict names, and installs the leader's encoded
 * state on a diverged node at the leader's applied index. Corrupting one
 * server's state outside the log must get exactly that server marked diverged
 * (follower or leader), the leader must step down, and recovery must bring the
 * node back to the healthy digest with every entry applied once. */
#include "fixture_util.h"

#define N_SERVERS 3
#define N_CMDS 30

static struct fx x; /* static: zeroed (P6) */

/* The leader's tally, reset when leadership moves (verdict.c follow_role). */
static struct ns_diverge_tally tally;
static unsigned tally_leader = FX_MAX;

static uint64_t id_of(unsigned i)
{
    return raft_fixture_get(&x.f, i)->id;
}

static size_t voters(unsigned l, uint64_t *out)
{
    const struct raft_configuration *c = &fx_raft(&x, l)->configuration;
    size_t n = 0;
    for (unsigned i = 0; i < c->n; i++) {
        if (c->servers[i].role == RAFT_VOTER) {
            out[n++] = c->servers[i].id;
        }
    }
    return n;
}

static void apply_or_fail(const struct ns_command *c)
{
    assert_int_equal(fx_apply_sync(&x, c, 30000), 0);
    unsigned l = fx_wait_leader(&x, 30000);
    assert_true(
        fx_wait_applied_all(&x, raft_last_index(fx_raft(&x, l)), 30000));
}

static void write_random(uint64_t *st, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        struct ns_command c;
        fx_cmd_random(&c, st);
        apply_or_fail(&c);
        ns_command_close(&c);
    }
}

/* One CHECKPOINT, every server's report to the leader, and the VERDICT the
 * tally decides (if any). Returns true when a verdict was applied. */
static bool checkpoint_round(void)
{
    struct ns_command c;
    ns_command_init(&c, NS_CMD_CHECKPOINT);
    c.leader_time_ms = FX_T0;
    apply_or_fail(&c);
    ns_command_close(&c);
    unsigned l = fx_wait_leader(&x, 30000);
    assert_true(l < x.n);
    if (tally_leader != l) {
        ns_diverge_tally_init(&tally);
        tally_leader = l;
    }
    ns_diverge_tally_close(&tally, x.s[l].dv.verdict.index);
    for (unsigned i = 0; i < x.n; i++) {
        struct ns_diverge_mark marks[NS_DIVERGE_RING];
        size_t n = ns_diverge_unjudged(&x.s[i].dv, marks, NS_DIVERGE_RING);
        for (size_t k = 0; k < n; k++) {
            ns_diverge_tally_add(&tally, marks[k].index, id_of(i),
                                 marks[k].digest);
        }
    }
    uint64_t ids[FX_MAX];
    size_t n_ids = voters(l, ids);
    struct ns_command v;
    int rv = ns_diverge_tally_decide(&tally, ids, n_ids, &v);
    if (rv != NS_DIVERGE_MAJORITY) {
        assert_int_equal(rv, NS_DIVERGE_PENDING);
        return false;
    }
    v.leader_time_ms = FX_T0;
    apply_or_fail(&v);
    ns_command_close(&v);
    return true;
}

static void corrupt(unsigned i)
{
    assert_int_equal(ns_kv_put(x.s[i].state.kv, "raftns.test", "corrupt", "1"),
                     0);
}

static bool stop_leader_not(struct raft_fixture *f, void *arg)
{
    unsigned old = *(unsigned *)arg;
    struct fx *fx = (struct fx *)f;
    unsigned l = fx_ready_leader(fx);
    return l < fx->n && l != old;
}

static void transfer_cb(struct raft_transfer *req)
{
    *(bool *)req->data = true;
}

/* verdict.c step_down: a diverged leader hands leadership to a healthy voter.
 * Returns the new leader. */
static unsigned step_down(unsigned l)
{
    uint64_t ids[FX_MAX];
    size_t n_ids = voters(l, ids);
    uint64_t target =
        ns_diverge_transfer_target(&x.s[l].dv, id_of(l), ids, n_ids);
    assert_true(target != 0);
    static struct raft_transfer req;
    bool done = false;
    memset(&req, 0, sizeof req);
    req.data = &done;
    assert_int_equal(raft_transfer(fx_raft(&x, l), &req, target, transfer_cb),
                     0);
    assert_true(raft_fixture_step_until(&x.f, stop_leader_not, &l, 30000));
    unsigned nl = fx_ready_leader(&x);
    assert_int_equal(id_of(nl), target);
    raft_fixture_step_until_elapsed(&x.f, 100); /* the transfer callback */
    assert_true(done);
    return nl;
}

/* recovery.c: the diverged server i copies the leader's state at the leader's
 * applied index; retried while i has applied past it. */
static void recover(unsigned i)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned l = fx_wait_leader(&x, 30000);
        assert_true(l < x.n && l != i);
        assert_false(ns_diverge_is_diverged(&x.s[l].dv));
        struct ns_buf enc;
        ns_buf_init(&enc);
        assert_int_equal(ns_snapshot_encode(&x.s[l].state, &enc), 0);
        uint64_t at = raft_last_applied(fx_raft(&x, l));
        int rv =
            ns_diverge_install(&x.s[i].dv, &x.s[i].state, enc.data, enc.len, at,
                               raft_last_applied(fx_raft(&x, i)));
        ns_buf_close(&enc);
        if (rv == 0) {
            return;
        }
        assert_int_equal(rv, NS_EAGAIN);
        raft_fixture_step(&x.f);
    }
    fail();
}

static void assert_health(unsigned bad)
{
    for (unsigned i = 0; i < x.n; i++) {
        if (i == bad) {
            assert_true(ns_diverge_is_diverged(&x.s[i].dv));
            assert_int_equal(x.s[i].dv.n_diverged, 1);
        } else {
            assert_int_equal(x.s[i].dv.health, NS_DIVERGE_HEALTHY);
            assert_int_equal(x.s[i].dv.n_diverged, 0);
        }
    }
    /* The verdict names the healthy voters, never the corrupted one. */
    const struct ns_diverge *d = &x.s[(bad + 1) % x.n].dv;
    assert_int_equal(d->n_healthy, x.n - 1);
    for (size_t k = 0; k < d->n_healthy; k++) {
        assert_int_not_equal(d->healthy[k], id_of(bad));
    }
}

/* Recovery of bad, with writes in flight while it is behind: afterwards every
 * replica is byte-identical, no entry was applied out of order or twice, and
 * the next verdict clears the diverged mark. */
static void recover_and_check(unsigned bad, uint64_t *st)
{
    /* Behind the leader when it installs: entries up to the copy's index
     * arrive later and must be skipped, later ones applied. */
    fx_isolate(&x, bad, true);
    for (unsigned k = 0; k < 5; k++) {
        struct ns_command c;
        fx_cmd_random(&c, st);
        assert_int_equal(fx_apply_sync(&x, &c, 30000), 0);
        ns_command_close(&c);
    }
    recover(bad);
    uint64_t at = x.s[bad].dv.installed_at;
    assert_true(at > raft_last_applied(fx_raft(&x, bad)));
    assert_int_equal(x.s[bad].dv.health, NS_DIVERGE_RECOVERING);
    fx_isolate(&x, bad, false);
    /* The first entry past the copy changes the state for sure: skipping it
     * too would show in the bytes. */
    struct ns_command first;
    fx_cmd_kv(&first, "ns", "after-install", "1");
    apply_or_fail(&first);
    ns_command_close(&first);
    write_random(st, 5);
    unsigned skipped = x.s[bad].fa.n_skipped;
    assert_true(skipped >= 1);
    assert_true(checkpoint_round());
    assert_int_equal(x.s[bad].dv.health, NS_DIVERGE_HEALTHY);
    assert_int_equal(x.s[bad].dv.n_recovered, 1);
    struct ns_buf all;
    fx_assert_converged(&x, &all);
    ns_buf_close(&all);
    uint64_t want = x.s[(bad + 1) % x.n].dv.last.digest;
    assert_int_equal(x.s[bad].dv.last.digest, want);
    for (unsigned i = 0; i < x.n; i++) {
        assert_int_equal(x.s[i].fa.n_out_of_order, 0);
        assert_false(ns_diverge_is_diverged(&x.s[i].dv));
    }
}

static void setup_n(uint64_t *st, unsigned n)
{
    fx_setup(&x, n, true);
    tally_leader = FX_MAX;
    for (unsigned i = 0; i < n; i++) {
        raft_fixture_set_network_latency(&x.f, i, 5 + fx_rand_below(st, 20));
        ns_diverge_init(&x.s[i].dv);
    }
    assert_true(fx_wait_leader(&x, 10000) < n);
    write_random(st, N_CMDS);
    assert_true(checkpoint_round());
    for (unsigned i = 0; i < x.n; i++) {
        assert_int_equal(x.s[i].dv.health, NS_DIVERGE_HEALTHY);
    }
}

static void setup_cluster(uint64_t *st)
{
    setup_n(st, N_SERVERS);
}

static void test_corrupted_follower_marked_by_majority(void **state)
{
    (void)state;
    uint64_t st = fx_seed("diverge_follower");
    setup_cluster(&st);
    for (unsigned i = 0; i < N_SERVERS; i++) {
        raft_set_snapshot_threshold(fx_raft(&x, i), 16);
        raft_set_snapshot_trailing(fx_raft(&x, i), 4);
    }
    unsigned l = fx_wait_leader(&x, 10000);
    unsigned bad = (l + 1) % N_SERVERS;
    corrupt(bad);
    write_random(&st, 5);
    assert_true(checkpoint_round());
    assert_health(bad);
    assert_int_equal(fx_wait_leader(&x, 10000), l); /* the leader stays */
    /* While diverged it keeps no snapshot of its wrong state; the others
     * go on taking theirs. */
    unsigned bad_snaps = x.s[bad].fa.n_snapshots,
             l_snaps = x.s[l].fa.n_snapshots;
    write_random(&st, 40);
    assert_int_equal(x.s[bad].fa.n_snapshots, bad_snaps);
    assert_true(x.s[l].fa.n_snapshots > l_snaps);
    recover_and_check(bad, &st);
    /* Recovered, it snapshots again. */
    write_random(&st, 40);
    assert_true(x.s[bad].fa.n_snapshots > bad_snaps);
    struct ns_buf all;
    fx_assert_converged(&x, &all);
    ns_buf_close(&all);
    fx_teardown(&x);
}

static void test_corrupted_leader_marked_and_steps_down(void **state)
{
    (void)state;
    uint64_t st = fx_seed("diverge_leader");
    setup_cluster(&st);
    unsigned l = fx_wait_leader(&x, 10000);
    corrupt(l);
    write_random(&st, 5);
    assert_true(checkpoint_round());
    assert_health(l);
    unsigned nl = step_down(l);
    assert_int_not_equal(nl, l);
    assert_false(ns_diverge_is_diverged(&x.s[nl].dv));
    assert_true(raft_state(fx_raft(&x, l)) != RAFT_LEADER);
    recover_and_check(l, &st);
    fx_teardown(&x);
}

/* Five voters, the leader and one follower corrupted alike: two equal wrong
 * digests are still a minority; both are marked, both recover. */
static void test_five_two_corrupted_alike(void **state)
{
    (void)state;
    uint64_t st = fx_seed("diverge_five");
    setup_n(&st, 5);
    unsigned l = fx_wait_leader(&x, 10000);
    unsigned f = (l + 2) % 5;
    corrupt(l);
    corrupt(f);
    write_random(&st, 5);
    assert_true(checkpoint_round());
    for (unsigned i = 0; i < 5; i++) {
        bool bad = i == l || i == f;
        assert_int_equal(ns_diverge_is_diverged(&x.s[i].dv), bad);
    }
    assert_int_equal(x.s[(l + 1) % 5].dv.n_healthy, 3);
    unsigned nl = step_down(l);
    assert_true(nl != l && nl != f);
    recover(l);
    recover(f);
    write_random(&st, 5);
    assert_true(checkpoint_round());
    for (unsigned i = 0; i < 5; i++) {
        assert_int_equal(x.s[i].dv.health, NS_DIVERGE_HEALTHY);
        assert_int_equal(x.s[i].fa.n_out_of_order, 0);
    }
    assert_int_equal(x.s[l].dv.n_recovered, 1);
    assert_int_equal(x.s[f].dv.n_recovered, 1);
    struct ns_buf all;
    fx_assert_converged(&x, &all);
    ns_buf_close(&all);
    fx_teardown(&x);
}

/* Three different digests: no verdict, nobody is judged. */
static void test_no_majority_no_verdict(void **state)
{
    (void)state;
    uint64_t st = fx_seed("diverge_no_majority");
    setup_cluster(&st);
    corrupt(0);
    assert_int_equal(ns_kv_put(x.s[1].state.kv, "raftns.test", "other", "2"),
                     0);
    write_random(&st, 3);
    assert_false(checkpoint_round());
    assert_true(tally.n_no_majority >= 1);
    for (unsigned i = 0; i < x.n; i++) {
        assert_int_equal(x.s[i].dv.health, NS_DIVERGE_HEALTHY);
        assert_int_equal(x.s[i].dv.n_diverged, 0);
    }
    fx_teardown(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corrupted_follower_marked_by_majority),
        cmocka_unit_test(test_corrupted_leader_marked_and_steps_down),
        cmocka_unit_test(test_five_two_corrupted_alike),
        cmocka_unit_test(test_no_majority_no_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
