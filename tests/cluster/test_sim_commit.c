/* The leader's commit index under a steady write load, over the simulated
 * cluster (sim.h): with writes arriving faster than a round trip to the
 * followers and their disks, libraft 0.15 alone commits nothing until the
 * writes pause (it looks for a quorum only at the leader's own last stored
 * index, which the followers' answers never reach while the load lasts);
 * raft/node/node_commit.c commits what a majority holds. Fails against the
 * mutant commit-own-stored (scripts/mutants.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

#define DISK_MS 10
#define NET_MS 5
#define CLIENTS 4
#define WRITES_PER_CLIENT 40
/* one write every EVERY_MS, round robin over the clients */
#define EVERY_MS 2

static unsigned answered(struct sim_client *const *c)
{
    unsigned n = 0;
    for (unsigned k = 0; k < CLIENTS; k++) {
        n += c[k]->n_replies;
    }
    return n;
}

/* Writes reach the leader every few ms (2 ms asked; the fixture steps to its
 * next event) for 300 ms or more; a write's round trip is about 30 ms (a 10 ms
 * disk on every node, 5 ms each way). While the load lasts, writes sent more
 * than 100 ms ago have been answered, and the commit index moved in every 20
 * ms; every write succeeds in the end, and every node holds the last value of
 * each key. */
static void test_commit_keeps_up_with_a_steady_load(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        raft_fixture_set_disk_latency(&s->f, i, DISK_MS);
        raft_fixture_set_network_latency(&s->f, i, NET_MS);
    }
    sim_run_for(s, 200); /* writes in flight before the change are done */
    struct raft *r = raft_fixture_get(&s->f, l);
    struct sim_client *c[CLIENTS];
    int32_t op[CLIENTS][WRITES_PER_CLIENT];
    for (unsigned k = 0; k < CLIENTS; k++) {
        c[k] = sim_client(s, l);
    }
    uint64_t t0 = sim_now(s);
    uint64_t sent_at[CLIENTS * WRITES_PER_CLIENT];
    unsigned n_sent = 0;
    raft_index commit_seen = r->commit_index;
    uint64_t commit_moved_at = t0;
    uint64_t longest_still = 0;
    for (unsigned w = 0; w < WRITES_PER_CLIENT; w++) {
        for (unsigned k = 0; k < CLIENTS; k++) {
            char key[16], v[16];
            snprintf(key, sizeof key, "k%u", k);
            snprintf(v, sizeof v, "v%u", w);
            op[k][w] = sim_send_kv_put(c[k], key, v);
            sent_at[n_sent++] = sim_now(s);
            sim_run_for(s, EVERY_MS);
            if (r->commit_index != commit_seen) {
                commit_seen = r->commit_index;
                commit_moved_at = sim_now(s);
            }
            uint64_t still = sim_now(s) - commit_moved_at;
            longest_still = still > longest_still ? still : longest_still;
        }
        unsigned due = 0;
        while (due < n_sent && sent_at[due] + 100 <= sim_now(s)) {
            due++;
        }
        if (answered(c) < due) {
            fail_msg("%llu ms into a steady load, %u writes answered of the "
                     "%u sent more than 100 ms ago (commit index %llu)",
                     (unsigned long long)(sim_now(s) - t0), answered(c), due,
                     (unsigned long long)r->commit_index);
        }
    }
    assert_true(sim_now(s) - t0 >= 300); /* the load lasted */
    if (longest_still > 20) {
        fail_msg("the commit index stood still for %llu ms under load",
                 (unsigned long long)longest_still);
    }
    assert_true(ns_node_commits_caught_up(s->nodes[l].node) > 0);
    for (unsigned k = 0; k < CLIENTS; k++) {
        for (unsigned w = 0; w < WRITES_PER_CLIENT; w++) {
            sim_expect_code(c[k], op[k][w], NS_CODE_SUCCESS);
        }
    }
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        for (unsigned k = 0; k < CLIENTS; k++) {
            char key[16], v[16];
            snprintf(key, sizeof key, "k%u", k);
            snprintf(v, sizeof v, "v%u", WRITES_PER_CLIENT - 1);
            sim_assert_kv(s, i, key, v);
        }
    }
}

/* A follower's answer moves the commit index only to what a majority then
 * holds, never past the leader's own stored index: ns_node_commit_quorum over a
 * leader at 0 stored. */
static void test_quorum_never_passes_the_leaders_disk(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct raft *r = raft_fixture_get(&s->f, l);
    raft_index stored = r->last_stored;
    raft_index majority = ns_node_commit_quorum(r, 0, 0);
    assert_true(majority <= stored);
    r->last_stored = 0;
    assert_int_equal(ns_node_commit_quorum(r, 0, stored + 100), 0);
    r->last_stored = stored;
    for (unsigned i = 0; i < r->configuration.n; i++) {
        if (r->configuration.servers[i].id != r->id) {
            /* one follower reporting more than the leader holds */
            assert_true(ns_node_commit_quorum(r, r->configuration.servers[i].id,
                                              stored + 100) <= stored);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_keeps_up_with_a_steady_load,
                                        sim_fixture_setup3,
                                        sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_commit_keeps_up_with_a_steady_load,
                                        sim_fixture_setup5,
                                        sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_quorum_never_passes_the_leaders_disk, sim_fixture_setup3,
            sim_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
