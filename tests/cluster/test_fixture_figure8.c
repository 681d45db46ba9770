/* Cluster test: the Raft paper's figure-8 schedule (§5.4.2) on 5 servers with
 * the mitigation for raft 0.15 (docs/raft-0.15.md §1): a raft_barrier right
 * after a node becomes leader, and no client command before that barrier
 * completed. The test asserts that the entry S1 applied is never lost and that
 * all replicas end byte-identical. The same schedule without the mitigation is
 * run in a child process (this executable with --unmitigated) and only
 * reported, never asserted: 0.15 is known to diverge there. */
#include <sys/wait.h>
#include <unistd.h>

#include "fixture_util.h"

#define N 5
#define FAST 1000
#define SLOW 20000

static struct fx x; /* static: zeroed (P6) */
/* Requests outlive run_schedule (callbacks fire on step-down or close). */
static struct fx_req rx, ry, rn;

/* Server fast times out first; every other one waits SLOW (also the timer
 * already running, through raft's public per-state field). */
static void favour(unsigned fast)
{
    for (unsigned i = 0; i < N; i++) {
        unsigned t = i == fast ? FAST : SLOW;
        struct raft *r = fx_raft(&x, i);
        raft_fixture_set_randomized_election_timeout(&x.f, i, t);
        if (raft_state(r) == RAFT_FOLLOWER) {
            r->follower_state.randomized_election_timeout = t;
        } else if (raft_state(r) == RAFT_CANDIDATE) {
            r->candidate_state.randomized_election_timeout = t;
        }
    }
}

/* Steps until server i is (ready) leader in a term above min_term. */
static bool step_until_leads(unsigned i, raft_term min_term, unsigned max_ms)
{
    raft_time end = raft_fixture_time(&x.f) + max_ms;
    while (raft_fixture_time(&x.f) < end) {
        struct raft *r = fx_raft(&x, i);
        if (fx_is_ready_leader(&x, i) && r->current_term > min_term) {
            return true;
        }
        raft_fixture_step(&x.f);
    }
    return false;
}

static void saturate_from(unsigned i, bool on)
{
    for (unsigned j = 0; j < N; j++) {
        if (j != i) {
            if (on) {
                raft_fixture_saturate(&x.f, i, j);
            } else {
                raft_fixture_desaturate(&x.f, i, j);
            }
        }
    }
}

static const char *value_on(unsigned i)
{
    return ns_kv_find(x.s[i].state.kv, "fig8", "k");
}

/* Runs the schedule; returns true when server 0 (S1) applied "term2" at the
 * step (c) commit. Leaves S1 killed and S5 revived. */
static bool run_schedule(bool mitigate)
{
    struct ns_command c;
    fx_setup(&x, N, mitigate);
    favour(0);
    assert_true(step_until_leads(0, 0, 10000));
    assert_true(fx_wait_applied_all(&x, raft_last_index(fx_raft(&x, 0)), 5000));

    /* (a) S1 leads (term 2) and replicates X only to S2. */
    raft_term t_a = fx_raft(&x, 0)->current_term;
    raft_fixture_saturate(&x.f, 0, 2);
    raft_fixture_saturate(&x.f, 0, 3);
    raft_fixture_saturate(&x.f, 0, 4);
    fx_cmd_kv(&c, "fig8", "k", "term2");
    assert_int_equal(fx_submit(&x, 0, &c, &rx), 0);
    ns_command_close(&c);
    raft_index ix = raft_last_index(fx_raft(&x, 0));
    raft_time end = raft_fixture_time(&x.f) + 2000;
    while (raft_last_index(fx_raft(&x, 1)) < ix) {
        assert_true(raft_fixture_time(&x.f) < end);
        raft_fixture_step(&x.f);
    }
    raft_fixture_kill(&x.f, 0);

    /* (b) S5 is elected by S3, S4, S5 (term 3) and takes a different entry
     * at the same index, which it cannot replicate. With the mitigation its
     * barrier holds that place and no client command is accepted. */
    favour(4);
    end = raft_fixture_time(&x.f) + 30000;
    while (raft_state(fx_raft(&x, 4)) != RAFT_LEADER ||
           fx_raft(&x, 4)->current_term <= t_a) {
        assert_true(raft_fixture_time(&x.f) < end);
        raft_fixture_step(&x.f);
    }
    saturate_from(4, true);
    if (!mitigate) {
        fx_cmd_kv(&c, "fig8", "k", "term3");
        assert_int_equal(fx_submit(&x, 4, &c, &ry), 0);
        ns_command_close(&c);
    } else {
        assert_false(fx_is_ready_leader(&x, 4)); /* the gate holds */
    }
    raft_fixture_step_until_elapsed(&x.f, 50); /* S5 stores it locally */
    raft_term t_b = fx_raft(&x, 4)->current_term;
    raft_fixture_kill(&x.f, 4);

    /* (c) S1 comes back, is elected (term 4) and brings X to S2 and S3; it
     * applies X, then crashes. */
    raft_fixture_desaturate(&x.f, 0, 2);
    raft_fixture_desaturate(&x.f, 0, 3);
    raft_fixture_revive(&x.f, 0);
    favour(0);
    bool s1_applied = false;
    end = raft_fixture_time(&x.f) + 30000;
    while (raft_fixture_time(&x.f) < end) {
        if (raft_last_applied(fx_raft(&x, 0)) >= ix &&
            raft_state(fx_raft(&x, 0)) == RAFT_LEADER &&
            fx_raft(&x, 0)->current_term > t_b) {
            s1_applied =
                value_on(0) != NULL && strcmp(value_on(0), "term2") == 0;
            break;
        }
        raft_fixture_step(&x.f);
    }
    raft_fixture_kill(&x.f, 0);

    /* (d) S5 comes back and tries to win with its term-3 entry. */
    saturate_from(4, false);
    raft_fixture_revive(&x.f, 4);
    favour(4);
    raft_fixture_step_until_elapsed(&x.f, 5000);
    unsigned l = fx_ready_leader(&x);
    if (l == x.n) {
        favour(1); /* S5 could not win: let S2 time out first */
        l = fx_wait_leader(&x, 60000);
    }
    assert_true(l < x.n);
    /* Let the new leader replicate and commit what it has. */
    struct ns_command noop;
    fx_cmd_kv(&noop, "fig8", "after", "1");
    if (fx_submit(&x, l, &noop, &rn) == 0) {
        raft_fixture_step_until(&x.f, fx_stop_done, &rn, 10000);
    }
    ns_command_close(&noop);
    raft_fixture_step_until_elapsed(&x.f, 2000);
    return s1_applied;
}

static void test_figure8_with_leader_barrier(void **state)
{
    (void)state;
    bool s1_applied = run_schedule(true);
    assert_true(s1_applied); /* the schedule reached the dangerous point */
    raft_fixture_revive(&x.f, 0);
    for (unsigned i = 0; i < N; i++) {
        raft_fixture_set_randomized_election_timeout(&x.f, i, 1000 + i * 100);
    }
    struct ns_buf all;
    fx_assert_converged(&x, &all);
    for (unsigned i = 0; i < N; i++) {
        /* What S1 applied is never lost. */
        assert_non_null(value_on(i));
        assert_string_equal(value_on(i), "term2");
    }
    ns_buf_close(&all);
    fx_teardown(&x);
}

/* Runs the unmitigated schedule in a child; reports, never asserts. */
static void test_figure8_unmitigated_reported(void **state)
{
    (void)state;
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_fixture_figure8", "--unmitigated",
              (char *)NULL);
        _exit(127);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 1) {
        printf("figure-8 without the barrier: replicas DIVERGED on this "
               "libraft (known 0.15 bug, not asserted)\n");
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        printf("figure-8 without the barrier: replicas stayed consistent\n");
    } else {
        printf("figure-8 without the barrier: child ended with status %d\n",
               st);
    }
}

static int run_unmitigated(void)
{
    bool s1_applied = run_schedule(false);
    const char *v0 = value_on(0);
    bool diverged = false;
    for (unsigned i = 1; i < N; i++) {
        const char *v = value_on(i);
        if (i == 4 || !raft_fixture_alive(&x.f, i)) {
            continue;
        }
        if ((v == NULL) != (v0 == NULL) || (v != NULL && strcmp(v, v0) != 0)) {
            diverged = true;
        }
    }
    printf("  unmitigated: S1 applied term2: %s; S1 has %s, S2 has %s, S5 has "
           "%s\n",
           s1_applied ? "yes" : "no", v0 ? v0 : "(none)",
           value_on(1) ? value_on(1) : "(none)",
           value_on(4) ? value_on(4) : "(none)");
    fflush(stdout);
    fx_teardown(&x);
    return diverged ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--unmitigated") == 0) {
        return run_unmitigated();
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_figure8_with_leader_barrier),
        cmocka_unit_test(test_figure8_unmitigated_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
