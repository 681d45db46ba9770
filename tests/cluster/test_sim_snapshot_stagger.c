/* Staggered snapshots (raft/node/node_log.c): nodes that apply the same log
 * take their snapshots at different indexes, each at most the threshold's
 * entries after its last, over the simulated cluster (sim.h); and the
 * placement rule itself over every small case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../raft/node/node_int.h"
#include "sim.h"

#define THRESHOLD 32
#define WRITES 150

/* Every snap, threshold and phase: the next snapshot comes more than half a
 * threshold and at most a threshold after snap, at the phase (modulo half a
 * threshold), and from there every 2 * (threshold / 2) entries. */
static void test_next_snapshot_rule(void **state)
{
    (void)state;
    for (unsigned t = 1; t <= 70; t++) {
        uint64_t half = t / 2;
        for (uint64_t phase = 0; phase < t; phase++) {
            for (uint64_t snap = 0; snap < 3 * (uint64_t)t; snap++) {
                uint64_t next = node_log_next_snapshot(snap, t, phase);
                if (half == 0) {
                    assert_int_equal(next, snap + t);
                    continue;
                }
                if (next <= snap + half || next > snap + 2 * half ||
                    next % half != phase % half) {
                    fail_msg("t %u phase %llu snap %llu: next %llu", t,
                             (unsigned long long)phase,
                             (unsigned long long)snap,
                             (unsigned long long)next);
                }
                assert_int_equal(node_log_next_snapshot(next, t, phase),
                                 next + 2 * half);
            }
        }
    }
}

/* The phases of a few node ids are far apart: any two of ids 1..5 at least
 * an eighth of the half threshold (the golden ratio's spread). */
static void test_phases_are_spread(void **state)
{
    (void)state;
    const unsigned t = 16384;
    for (uint64_t a = 1; a <= 5; a++) {
        for (uint64_t b = a + 1; b <= 5; b++) {
            uint64_t pa = node_log_phase(a, t), pb = node_log_phase(b, t);
            uint64_t d = pa > pb ? pa - pb : pb - pa;
            if (d < t / 2 / 8) {
                fail_msg("ids %llu and %llu: phases %llu and %llu",
                         (unsigned long long)a, (unsigned long long)b,
                         (unsigned long long)pa, (unsigned long long)pb);
            }
            assert_true(pa < t / 2 && pb < t / 2);
        }
    }
}

static int setup3_snap(void **state)
{
    struct sim_opts o = {.snapshot_threshold = THRESHOLD};
    *state = sim_fixture_new(3, 3, &o);
    return 0;
}

/* WRITES PUT_KVs through the leader: every node took snapshots, no two at
 * the same last index, and each holds at most a threshold of entries more. */
static void test_nodes_snapshot_at_different_indexes(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = NULL;
    for (int i = 0; i < WRITES; i++) {
        if (i % 50 == 0) {
            c = sim_client(s, l); /* a client keeps a bounded reply log */
        }
        char v[16];
        snprintf(v, sizeof v, "v%d", i);
        sim_expect_code(c, sim_send_kv_put(c, "k", v), NS_CODE_SUCCESS);
    }
    sim_settle(s);
    raft_index snap[3];
    for (unsigned i = 0; i < s->n; i++) {
        struct raft *r = raft_fixture_get(&s->f, i);
        snap[i] = r->log.snapshot.last_index;
        if (snap[i] == 0 || raft_last_applied(r) - snap[i] > THRESHOLD) {
            fail_msg("node %u: snapshot at %llu, applied %llu", i,
                     (unsigned long long)snap[i],
                     (unsigned long long)raft_last_applied(r));
        }
    }
    for (unsigned i = 0; i < s->n; i++) {
        for (unsigned j = i + 1; j < s->n; j++) {
            if (snap[i] == snap[j]) {
                fail_msg("nodes %u and %u both took their snapshot at %llu", i,
                         j, (unsigned long long)snap[i]);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_next_snapshot_rule),
        cmocka_unit_test(test_phases_are_spread),
        cmocka_unit_test_setup_teardown(
            test_nodes_snapshot_at_different_indexes, setup3_snap,
            sim_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
