/* Cluster test: snapshots encoded off the loop (raft/node/snapshot_fork.c and
 * the adapter's FSM version 3). First the encoder alone: what it hands over
 * is byte for byte the state at the freeze, although the state changes
 * between the freeze and the collect. Then raft 0.15's version-3 path on
 * raft_fixture (which runs the async work at a later simulated step, with
 * entries applied in between): a follower cut off while snapshots are taken
 * under load catches up by InstallSnapshot and ends byte-identical to the
 * others and to a reference state. */
#include <signal.h>
#include <sys/wait.h>

#include "fixture_util.h"
#include "raftns/snapshot_fork.h"

#define N_CMDS 200

static struct fx x; /* static: zeroed (P6) */
static struct ns_command cmds[N_CMDS];
static struct fx_req reqs[N_CMDS];
static bool acked[N_CMDS];

static void encode(const struct ns_state *s, struct ns_buf *out)
{
    ns_buf_init(out);
    assert_int_equal(ns_snapshot_encode(s, out), 0);
}

static void test_collect_is_the_state_at_freeze(void **state)
{
    (void)state;
    uint64_t st = fx_seed("snapshot_fork_freeze");
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    struct ns_command c;
    for (unsigned i = 0; i < 300; i++) {
        fx_cmd_random(&c, &st);
        assert_int_equal(ns_fsm_apply(&s, &c, NULL), 0);
        ns_command_close(&c);
    }
    struct ns_buf at_freeze, later;
    encode(&s, &at_freeze);
    struct ns_snapshot_fork f = {0, -1, 0};
    assert_int_equal(ns_snapshot_fork_freeze(&f, &s), 0);
    /* The loop goes on applying while the child encodes. */
    for (unsigned i = 0; i < 300; i++) {
        fx_cmd_random(&c, &st);
        assert_int_equal(ns_fsm_apply(&s, &c, NULL), 0);
        ns_command_close(&c);
    }
    encode(&s, &later);
    assert_false(later.len == at_freeze.len &&
                 memcmp(later.data, at_freeze.data, later.len) == 0);
    uint8_t *got = NULL;
    size_t len = 0;
    assert_int_equal(ns_snapshot_fork_collect(&f, malloc, free, &got, &len), 0);
    assert_int_equal(f.pid, 0);
    assert_int_equal(len, at_freeze.len);
    assert_memory_equal(got, at_freeze.data, len);
    /* ... and it restores to that state. */
    struct ns_state back;
    struct ns_buf again;
    assert_int_equal(ns_state_init(&back), 0);
    assert_int_equal(ns_snapshot_decode(&back, got, len), 0);
    encode(&back, &again);
    assert_int_equal(again.len, len);
    assert_memory_equal(again.data, got, len);
    ns_snapshot_fork_abandon(&f); /* after a collect: nothing left */
    free(got);
    ns_buf_close(&again);
    ns_buf_close(&later);
    ns_buf_close(&at_freeze);
    ns_state_close(&back);
    ns_state_close(&s);
}

static void test_digest_is_the_state_at_start(void **state)
{
    (void)state;
    uint64_t st = fx_seed("snapshot_fork_digest");
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    struct ns_command c;
    for (unsigned i = 0; i < 200; i++) {
        fx_cmd_random(&c, &st);
        assert_int_equal(ns_fsm_apply(&s, &c, NULL), 0);
        ns_command_close(&c);
    }
    uint64_t want = 0, now = 0, got = 0;
    assert_int_equal(ns_snapshot_digest(&s, &want), 0);
    struct ns_snapshot_fork f = {0, -1, 0};
    assert_int_equal(ns_snapshot_fork_digest(&f, &s), 0);
    for (unsigned i = 0; i < 200; i++) {
        fx_cmd_random(&c, &st);
        assert_int_equal(ns_fsm_apply(&s, &c, NULL), 0);
        ns_command_close(&c);
    }
    assert_int_equal(ns_snapshot_digest(&s, &now), 0);
    assert_true(now != want);
    while (!ns_snapshot_fork_is_done(&f)) { /* polled, as the loop does */
    }
    assert_int_equal(ns_snapshot_fork_collect_digest(&f, &got), 0);
    assert_true(got == want);
    assert_false(ns_snapshot_fork_is_done(&f)); /* nothing in flight */
    ns_snapshot_fork_abandon(&f); /* reaps a child still exiting */
    assert_int_equal(f.zombie, 0);
    ns_state_close(&s);
}

static void test_abandon_reaps_the_child(void **state)
{
    (void)state;
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    struct ns_snapshot_fork f = {0, -1, 0};
    assert_int_equal(ns_snapshot_fork_freeze(&f, &s), 0);
    pid_t pid = f.pid;
    assert_true(pid > 0);
    ns_snapshot_fork_abandon(&f);
    assert_int_equal(f.pid, 0);
    assert_int_equal(f.fd, -1);
    assert_int_equal(waitpid(pid, NULL, WNOHANG), -1); /* already reaped */
    ns_state_close(&s);
}

/* The fixture's snapshotter: one fork per server, as the node's. */
static struct ns_snapshot_fork forks[3];

static unsigned n_freezes;

static int fork_freeze(void *arg, const struct ns_state *s)
{
    n_freezes++;
    return ns_snapshot_fork_freeze(arg, s);
}

static int fork_collect(void *arg, uint8_t **data, size_t *len)
{
    return ns_snapshot_fork_collect(arg, raft_malloc, raft_free, data, len);
}

static void fork_release(void *arg)
{
    ns_snapshot_fork_abandon(arg);
}

static unsigned n_replaced; /* restores that told the snapshotter first */

static void fork_replaced(void *arg)
{
    (void)arg; /* a forked child has its own copy of the old state */
    n_replaced++;
}

static void test_async_snapshot_install_to_lagging_node(void **state)
{
    (void)state;
    uint64_t st = fx_seed("snapshot_fork_install");
    memset(reqs, 0, sizeof reqs);
    memset(acked, 0, sizeof acked);
    fx_setup(&x, 3, true);
    for (unsigned i = 0; i < 3; i++) {
        forks[i].pid = 0;
        forks[i].fd = -1;
        forks[i].zombie = 0;
        const struct ns_fsm_adapter_snapshotter snap = {
            fork_freeze, fork_collect, fork_release, fork_replaced, &forks[i]};
        /* raft_init checked version 1; raft reads the version again at
         * every snapshot (docs/raft-0.15.md §5). */
        ns_fsm_adapter_set_snapshotter(&x.s[i].fa, &snap);
        x.f.servers[i].io.version = 2;
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
    assert_int_equal(s.n_lost, 0);
    assert_int_equal(raft_last_index(fx_raft(&x, lag)), lag_before);
    assert_int_equal(x.s[lag].fa.n_restores, 0);
    /* Fewer than version 1 takes: raft takes no snapshot while one is
     * being encoded. */
    assert_true(x.s[l].fa.n_snapshots >= 2);
    assert_true(n_freezes >= 4); /* the version-3 path, on both voters */

    fx_isolate(&x, lag, false);
    struct ns_buf all;
    fx_assert_converged(&x, &all);
    assert_true(x.s[lag].fa.n_restores >= 1);
    assert_true(n_replaced >= x.s[lag].fa.n_restores);
    assert_true(x.s[lag].fa.n_applies < N_CMDS);

    struct ns_state ref;
    assert_int_equal(ns_state_init(&ref), 0);
    for (unsigned i = 0; i < N_CMDS; i++) {
        assert_int_equal(ns_fsm_apply(&ref, &cmds[i], NULL), 0);
        ns_command_close(&cmds[i]);
    }
    fx_assert_equals_state(&all, &ref);
    ns_buf_close(&all);
    ns_state_close(&ref);
    fx_teardown(&x);
    for (unsigned i = 0; i < 3; i++) {
        ns_snapshot_fork_abandon(&forks[i]); /* one may be in flight */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collect_is_the_state_at_freeze),
        cmocka_unit_test(test_digest_is_the_state_at_start),
        cmocka_unit_test(test_abandon_reaps_the_child),
        cmocka_unit_test(test_async_snapshot_install_to_lagging_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
