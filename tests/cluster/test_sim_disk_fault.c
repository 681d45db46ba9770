/* A leader whose disk write fails, over the simulated cluster (sim.h).
 * First raft_fixture's injected I/O failure, which fails the write when it is
 * submitted (raft_apply returns the error); then a write that fails later, in
 * its callback, as a disk does: the leader's append is wrapped so that one
 * write persists nothing and reports RAFT_IOERR a step after it was
 * submitted. libraft 0.15 then truncates the leader's log and leads on in
 * the same term (docs/raft-0.15.md §20); raftns fences that leader
 * (raft/node/node_fence.c). Either way every write is answered exactly once,
 * the writes after it succeed, and every node ends with the same state and
 * the same writes applied. Last, a new leader whose barrier write fails
 * leaves its term to another. Mutant lead-after-disk-failure
 * (scripts/mutants.sh) fails the last two: followers and leader diverge,
 * libraft crashes, or no leader ever takes writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

#define N_BATCH 5

static unsigned count_replies(struct sim_client *c, int32_t opaque)
{
    unsigned n = 0;
    for (unsigned i = 0; i < c->n_replies; i++) {
        n += c->replies[i].opaque == opaque;
    }
    return n;
}

static int32_t reply_code(struct sim_client *c, int32_t opaque)
{
    struct sim_reply *r = sim_find_reply(c, opaque);
    assert_non_null(r);
    struct ns_cmd reply;
    assert_int_equal(ns_cmd_decode(r->frame, r->len, &reply), 0);
    int32_t code = reply.code;
    ns_cmd_close(&reply);
    return code;
}

/* Sends N_BATCH writes of "k" (values prefix0..prefix4) in one turn. */
static void send_batch(struct sim_client *c, const char *prefix,
                       int32_t ops[N_BATCH])
{
    for (unsigned i = 0; i < N_BATCH; i++) {
        char v[16];
        snprintf(v, sizeof v, "%s%u", prefix, i);
        ops[i] = sim_send_kv_put(c, "k", v);
    }
}

struct batch_wait {
    struct sim_client *c;
    const int32_t *ops;
    unsigned n;
};

static bool all_replied(struct sim *s, void *arg)
{
    (void)s;
    const struct batch_wait *w = arg;
    for (unsigned i = 0; i < w->n; i++) {
        if (sim_find_reply(w->c, w->ops[i]) == NULL) {
            return false;
        }
    }
    return true;
}

static void test_failed_leader_write_answers_its_batch(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, l);
    sim_expect_code(c, sim_send_kv_put(c, "k", "before"), NS_CODE_SUCCESS);

    /* The leader's next disk write fails: the batch of N_BATCH writes sent
     * in one turn. */
    raft_fixture_io_fault(&s->f, l, 0, 1);
    int32_t ops[N_BATCH];
    send_batch(c, "lost", ops);
    struct batch_wait w = {c, ops, N_BATCH};
    assert_true(sim_run_until(s, all_replied, &w, 30000));

    /* Writes after it, through whichever node leads now, fill the indexes
     * the failed batch had. */
    unsigned l2 = sim_settle(s);

    struct sim_client *c2 = l2 == l ? c : sim_client(s, l2);
    int32_t after[N_BATCH];
    send_batch(c2, "after", after);
    struct batch_wait w2 = {c2, after, N_BATCH};
    assert_true(sim_run_until(s, all_replied, &w2, 30000));
    for (unsigned i = 0; i < N_BATCH; i++) {
        assert_int_equal(reply_code(c2, after[i]), NS_CODE_SUCCESS);
    }
    sim_run_for(s, 3000);
    sim_settle(s);

    /* One answer each, never a second when the later writes applied. */
    unsigned lost_ok = 0;
    for (unsigned i = 0; i < N_BATCH; i++) {
        assert_int_equal(count_replies(c, ops[i]), 1);
        assert_int_equal(count_replies(c2, after[i]), 1);
        lost_ok += reply_code(c, ops[i]) == NS_CODE_SUCCESS;
    }
    /* A write answered as done was applied: every node applied "before",
     * the later writes and at least each acknowledged one of the batch. */
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "k", "after4");
        unsigned applied = sim_n_applied(s, i, NS_CMD_KV_PUT, true);
        assert_true(applied >= 1 + N_BATCH + lost_ok);
        assert_true(applied <= 1 + 2 * N_BATCH);
        assert_int_equal(applied, sim_n_applied(s, 0, NS_CMD_KV_PUT, true));
    }
}

static int (*fixture_append)(struct raft_io *io, struct raft_io_append *req,
                             const struct raft_entry entries[], unsigned n,
                             raft_io_append_cb cb);
static bool fail_next_append;
static unsigned appends_failed;
static struct raft_io_append *failed_req;
static raft_io_append_cb failed_cb;

static int wrapped_append(struct raft_io *io, struct raft_io_append *req,
                          const struct raft_entry entries[], unsigned n,
                          raft_io_append_cb cb)
{
    /* io->data is the raft: only a leader's own write fails */
    if (!fail_next_append ||
        raft_state((struct raft *)io->data) != RAFT_LEADER) {
        return fixture_append(io, req, entries, n, cb);
    }
    fail_next_append = false;
    failed_req = req;
    failed_cb = cb;
    return 0;
}

static bool run_failing(struct sim *s, bool (*pred)(struct sim *, void *),
                        void *arg, uint64_t max_ms)
{
    uint64_t end = sim_now(s) + max_ms;
    while (!pred(s, arg) && sim_now(s) < end) {
        sim_step(s);
        if (failed_req != NULL) {
            struct raft_io_append *req = failed_req;
            failed_req = NULL;
            appends_failed++;
            failed_cb(req, RAFT_IOERR);
            sim_after(s);
        }
    }
    return pred(s, arg);
}

static void test_leader_write_failing_later_keeps_nodes_equal(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, l);
    sim_expect_code(c, sim_send_kv_put(c, "k", "before"), NS_CODE_SUCCESS);
    struct raft_io *io = raft_fixture_get(&s->f, l)->io;
    fixture_append = io->append;
    io->append = wrapped_append;
    appends_failed = 0;
    fail_next_append = true;
    int32_t ops[N_BATCH];
    send_batch(c, "lost", ops);
    struct batch_wait w = {c, ops, N_BATCH};
    assert_true(run_failing(s, all_replied, &w, 30000));
    assert_int_equal(appends_failed, 1);
    unsigned l2 = sim_settle(s);
    struct sim_client *c2 = l2 == l ? c : sim_client(s, l2);
    int32_t after[N_BATCH];
    send_batch(c2, "after", after);
    struct batch_wait w2 = {c2, after, N_BATCH};
    assert_true(sim_run_until(s, all_replied, &w2, 30000));
    sim_run_for(s, 3000);
    sim_settle(s);
    io->append = fixture_append;
    unsigned lost_ok = 0, after_ok = 0;
    for (unsigned i = 0; i < N_BATCH; i++) {
        assert_int_equal(count_replies(c, ops[i]), 1);
        assert_int_equal(count_replies(c2, after[i]), 1);
        lost_ok += reply_code(c, ops[i]) == NS_CODE_SUCCESS;
        after_ok += reply_code(c2, after[i]) == NS_CODE_SUCCESS;
    }
    /* The batch's writes are answered with an error (their entries may
     * still be committed by the next leader, which that error allows), the
     * later ones succeed, under another leader: the old one was fenced. */
    assert_int_equal(lost_ok, 0);
    assert_int_equal(after_ok, N_BATCH);
    assert_true(l2 != l);
    assert_int_equal(ns_node_fences(s->nodes[l].node), 1);
    const char *v0 = sim_kv(s, 0, "k");
    assert_non_null(v0);
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "k", v0);
        assert_int_equal(sim_n_applied(s, i, NS_CMD_KV_PUT, true),
                         sim_n_applied(s, 0, NS_CMD_KV_PUT, true));
    }
}

static bool one_failed(struct sim *s, void *arg)
{
    (void)s;
    (void)arg;
    return appends_failed > 0;
}

/* A new leader's first write is its barrier: when that write fails, the
 * leader cannot take writes in its term, so it must leave it to another. */
static void test_new_leader_barrier_write_failing(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, l);
    sim_expect_code(c, sim_send_kv_put(c, "k", "before"), NS_CODE_SUCCESS);
    for (unsigned i = 0; i < s->n; i++) {
        struct raft_io *io = raft_fixture_get(&s->f, i)->io;
        fixture_append = io->append;
        io->append = wrapped_append;
    }
    appends_failed = 0;
    fail_next_append = true;
    sim_kill(s, l);
    assert_true(run_failing(s, one_failed, NULL, 30000));
    unsigned l2 = sim_settle(s);
    assert_true(l2 != l);
    struct sim_client *c2 = sim_client(s, l2);
    sim_expect_code(c2, sim_send_kv_put(c2, "k", "after"), NS_CODE_SUCCESS);
    sim_settle(s);
    unsigned fenced = 0;
    for (unsigned i = 0; i < s->n; i++) {
        raft_fixture_get(&s->f, i)->io->append = fixture_append;
        if (i != l) {
            sim_assert_kv(s, i, "k", "after");
            fenced += (unsigned)ns_node_fences(s->nodes[i].node);
        }
    }
    assert_int_equal(fenced, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_failed_leader_write_answers_its_batch, sim_fixture_setup3,
            sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_failed_leader_write_answers_its_batch, sim_fixture_setup5,
            sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_leader_write_failing_later_keeps_nodes_equal,
            sim_fixture_setup3, sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_leader_write_failing_later_keeps_nodes_equal,
            sim_fixture_setup5, sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_new_leader_barrier_write_failing,
                                        sim_fixture_setup3,
                                        sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_new_leader_barrier_write_failing,
                                        sim_fixture_setup5,
                                        sim_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
