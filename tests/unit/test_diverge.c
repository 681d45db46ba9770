/* Unit tests of raft/diverge.c: the majority rule over a table of vote sets,
 * the leader's tally (one verdict per checkpoint, no majority closes it,
 * resent votes do not reopen it, a full tally drops the oldest), the judgement
 * of VERDICT entries against a node's own digests, and the recovery
 * bookkeeping (install at or behind the copy's index, skipping, snapshots
 * postponed, raft restores). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/diverge.h"
#include "raftns/err.h"
#include "raftns/fsm.h"

#define V(id, digest)                                                          \
    {                                                                          \
        0, id, digest                                                          \
    }

struct majority_case {
    const char *name;
    struct ns_diverge_vote votes[8];
    size_t n_votes;
    uint64_t voters[8];
    size_t n_voters;
    enum ns_diverge_decision want;
    uint64_t digest;
};

static const struct majority_case MAJORITY[] = {
    {"3 voters agree",
     {V(1, 7), V(2, 7), V(3, 7)},
     3,
     {1, 2, 3},
     3,
     NS_DIVERGE_MAJORITY,
     7},
    {"the leader (1) alone differs",
     {V(1, 9), V(2, 7), V(3, 7)},
     3,
     {1, 2, 3},
     3,
     NS_DIVERGE_MAJORITY,
     7},
    {"a follower alone differs",
     {V(1, 7), V(2, 9), V(3, 7)},
     3,
     {1, 2, 3},
     3,
     NS_DIVERGE_MAJORITY,
     7},
    {"2 of 3 reported, agreeing",
     {V(1, 7), V(3, 7)},
     2,
     {1, 2, 3},
     3,
     NS_DIVERGE_MAJORITY,
     7},
    {"2 of 3 reported, disagreeing",
     {V(1, 7), V(3, 9)},
     2,
     {1, 2, 3},
     3,
     NS_DIVERGE_PENDING,
     0},
    {"one vote of 3", {V(1, 7)}, 1, {1, 2, 3}, 3, NS_DIVERGE_PENDING, 0},
    {"three different digests",
     {V(1, 7), V(2, 8), V(3, 9)},
     3,
     {1, 2, 3},
     3,
     NS_DIVERGE_NO_MAJORITY,
     0},
    {"4 voters split 2:2",
     {V(1, 7), V(2, 7), V(3, 9), V(4, 9)},
     4,
     {1, 2, 3, 4},
     4,
     NS_DIVERGE_NO_MAJORITY,
     0},
    {"4 voters 2:1, one missing",
     {V(1, 7), V(2, 7), V(3, 9)},
     3,
     {1, 2, 3, 4},
     4,
     NS_DIVERGE_PENDING,
     0},
    {"5 voters 3:2",
     {V(1, 9), V(2, 9), V(3, 7), V(4, 7), V(5, 7)},
     5,
     {1, 2, 3, 4, 5},
     5,
     NS_DIVERGE_MAJORITY,
     7},
    {"a non-voter's vote does not count",
     {V(1, 7), V(9, 7)},
     2,
     {1, 2, 3},
     3,
     NS_DIVERGE_PENDING,
     0},
    {"a voter counts once (its first vote)",
     {V(1, 7), V(1, 9), V(1, 9)},
     3,
     {1, 2, 3},
     3,
     NS_DIVERGE_PENDING,
     0},
    {"one voter", {V(1, 7)}, 1, {1}, 1, NS_DIVERGE_MAJORITY, 7},
    {"no voters", {V(1, 7)}, 1, {0}, 0, NS_DIVERGE_NO_MAJORITY, 0},
};

static void test_majority_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof MAJORITY / sizeof MAJORITY[0]; i++) {
        const struct majority_case *m = &MAJORITY[i];
        uint64_t digest = 0;
        enum ns_diverge_decision d = ns_diverge_majority(
            m->votes, m->n_votes, m->voters, m->n_voters, &digest);
        if (d != m->want || (d == NS_DIVERGE_MAJORITY && digest != m->digest)) {
            print_error("case '%s': decision %d digest %llu\n", m->name, (int)d,
                        (unsigned long long)digest);
            fail();
        }
    }
}

static const uint64_t VOTERS3[] = {1, 2, 3};

static void test_tally_one_verdict_per_checkpoint(void **state)
{
    (void)state;
    struct ns_diverge_tally t;
    struct ns_command c;
    ns_diverge_tally_init(&t);
    ns_diverge_tally_add(&t, 10, 1, 0xBAD); /* the corrupted leader */
    assert_int_equal(ns_diverge_tally_decide(&t, VOTERS3, 3, &c),
                     NS_DIVERGE_PENDING);
    ns_diverge_tally_add(&t, 10, 2, 0x600D);
    assert_int_equal(ns_diverge_tally_decide(&t, VOTERS3, 3, &c),
                     NS_DIVERGE_PENDING);
    ns_diverge_tally_add(&t, 10, 3, 0x600D);
    assert_int_equal(ns_diverge_tally_decide(&t, VOTERS3, 3, &c),
                     NS_DIVERGE_MAJORITY);
    assert_int_equal(c.type, NS_CMD_VERDICT);
    assert_int_equal(c.u.verdict.index, 10);
    assert_int_equal(c.u.verdict.digest, 0x600D);
    assert_int_equal(c.u.verdict.n_agree, 2);
    assert_int_equal(c.u.verdict.agree[0], 2);
    assert_int_equal(c.u.verdict.agree[1], 3);
    assert_int_equal(c.u.verdict.n_dissent, 1);
    assert_int_equal(c.u.verdict.dissent[0], 1);
    ns_command_close(&c);
    /* Decided: resent votes are ignored, nothing more to propose. */
    ns_diverge_tally_add(&t, 10, 1, 0xBAD);
    assert_int_equal(t.n, 0);
    assert_int_equal(ns_diverge_tally_decide(&t, VOTERS3, 3, &c),
                     NS_DIVERGE_PENDING);
}

static void test_tally_no_majority_closes(void **state)
{
    (void)state;
    struct ns_diverge_tally t;
    struct ns_command c;
    ns_diverge_tally_init(&t);
    ns_diverge_tally_add(&t, 5, 1, 1);
    ns_diverge_tally_add(&t, 5, 2, 2);
    ns_diverge_tally_add(&t, 5, 3, 3);
    ns_diverge_tally_add(&t, 8, 1, 4);
    ns_diverge_tally_add(&t, 8, 2, 4);
    /* 5 has no majority (recorded, no verdict); 8 has one. */
    assert_int_equal(ns_diverge_tally_decide(&t, VOTERS3, 3, &c),
                     NS_DIVERGE_MAJORITY);
    assert_int_equal(c.u.verdict.index, 8);
    ns_command_close(&c);
    assert_int_equal(t.no_majority_index, 5);
    assert_int_equal(t.n_no_majority, 1);
    ns_diverge_tally_add(&t, 5, 1, 2); /* a resend cannot reopen it */
    assert_int_equal(t.n, 0);
}

static void test_tally_newer_pending_older_open(void **state)
{
    (void)state;
    struct ns_diverge_tally t;
    struct ns_command c;
    ns_diverge_tally_init(&t);
    ns_diverge_tally_add(&t, 5, 1, 1); /* only one vote: pending */
    ns_diverge_tally_add(&t, 8, 1, 4);
    ns_diverge_tally_add(&t, 8, 3, 4);
    ns_diverge_tally_add(&t, 8, 3, 4); /* the same vote again: once */
    assert_int_equal(ns_diverge_tally_decide(&t, VOTERS3, 3, &c),
                     NS_DIVERGE_MAJORITY);
    assert_int_equal(c.u.verdict.index, 8);
    assert_int_equal(c.u.verdict.n_agree, 2);
    ns_command_close(&c);
    assert_int_equal(t.closed_through, 8); /* 5 is superseded */
    assert_int_equal(t.n, 0);
}

static void test_tally_full_drops_oldest(void **state)
{
    (void)state;
    struct ns_diverge_tally t;
    ns_diverge_tally_init(&t);
    for (uint64_t i = 1; i <= NS_DIVERGE_MAX_VOTES; i++) {
        ns_diverge_tally_add(&t, i, 1, i);
    }
    assert_int_equal(t.n, NS_DIVERGE_MAX_VOTES);
    ns_diverge_tally_add(&t, 1000, 1, 7);
    assert_int_equal(t.n, NS_DIVERGE_MAX_VOTES);
    for (size_t i = 0; i < t.n; i++) {
        assert_int_not_equal(t.votes[i].index, 1);
    }
}

/* Out of memory while building the verdict: NS_ENOMEM and the checkpoint
 * stays open, so the next decision proposes it. */
static void test_tally_alloc_failure(void **state)
{
    (void)state;
    bool ok = false;
    for (long k = 0; !ok && k < 10; k++) {
        struct ns_diverge_tally t;
        struct ns_command c;
        ns_diverge_tally_init(&t);
        ns_diverge_tally_add(&t, 4, 1, 7);
        ns_diverge_tally_add(&t, 4, 2, 7);
        ns_alloc_fail_at(k, 1);
        int rv = ns_diverge_tally_decide(&t, VOTERS3, 3, &c);
        ns_alloc_fail_at(-1, 0);
        if (rv == NS_ENOMEM) {
            assert_int_equal(t.closed_through, 0);
            assert_int_equal(t.n, 2);
            continue;
        }
        assert_int_equal(rv, NS_DIVERGE_MAJORITY);
        assert_int_equal(t.closed_through, 4);
        ns_command_close(&c);
        ok = true;
    }
    assert_true(ok);
}

/* --- a node's judgement --- */

static void apply_cmd(struct ns_diverge *d, struct ns_state *s, uint64_t index,
                      const struct ns_command *c, enum ns_diverge_event *ev)
{
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_command_encode(c, &b), 0);
    assert_int_equal(ns_fsm_apply_bytes(s, b.data, b.len, NULL), 0);
    assert_int_equal(ns_diverge_on_apply(d, s, index, b.data, b.len, ev), 0);
    ns_buf_close(&b);
}

static void checkpoint(struct ns_diverge *d, struct ns_state *s, uint64_t index)
{
    struct ns_command c;
    enum ns_diverge_event ev;
    ns_command_init(&c, NS_CMD_CHECKPOINT);
    apply_cmd(d, s, index, &c, &ev);
    assert_int_equal(ev, NS_DIVERGE_EV_MARK);
    assert_int_equal(d->last.index, index);
}

static enum ns_diverge_event verdict(struct ns_diverge *d, struct ns_state *s,
                                     uint64_t index, uint64_t of,
                                     uint64_t digest)
{
    struct ns_command c;
    enum ns_diverge_event ev;
    ns_command_init(&c, NS_CMD_VERDICT);
    c.u.verdict.index = of;
    c.u.verdict.digest = digest;
    c.u.verdict.agree = ns_calloc(1, sizeof(uint64_t));
    c.u.verdict.agree[0] = 2;
    c.u.verdict.n_agree = 1;
    apply_cmd(d, s, index, &c, &ev);
    ns_command_close(&c);
    return ev;
}

static void kv(struct ns_state *s, const char *key, const char *value)
{
    assert_int_equal(ns_kv_put(s->kv, "ns", key, value), 0);
}

static void test_judgement(void **state)
{
    (void)state;
    struct ns_state s;
    struct ns_diverge d;
    assert_int_equal(ns_state_init(&s), 0);
    ns_diverge_init(&d);
    kv(&s, "a", "1");
    checkpoint(&d, &s, 3);
    uint64_t good = d.last.digest;
    assert_int_equal(ns_diverge_unjudged(&d, NULL, 0), 0);
    struct ns_diverge_mark marks[4];
    assert_int_equal(ns_diverge_unjudged(&d, marks, 4), 1);
    assert_int_equal(marks[0].index, 3);
    /* A verdict about an index this node holds no digest of judges nothing. */
    assert_int_equal(verdict(&d, &s, 4, 2, good), NS_DIVERGE_EV_UNJUDGED);
    assert_int_equal(d.health, NS_DIVERGE_UNJUDGED);
    assert_int_equal(verdict(&d, &s, 5, 3, good), NS_DIVERGE_EV_AGREE);
    assert_int_equal(d.health, NS_DIVERGE_HEALTHY);
    assert_int_equal(ns_diverge_unjudged(&d, marks, 4), 0);
    /* Corrupted outside the log: the next verdict finds it. */
    kv(&s, "corrupt", "1");
    checkpoint(&d, &s, 7);
    assert_int_equal(verdict(&d, &s, 8, 7, 0x1234), NS_DIVERGE_EV_DIVERGED);
    assert_true(ns_diverge_is_diverged(&d));
    assert_int_equal(d.judged.index, 7);
    assert_int_equal(d.judged.digest, 0x1234);
    assert_int_equal(d.judged_local, d.last.digest);
    assert_int_equal(d.n_diverged, 1);
    /* An older verdict than the last one changes nothing. */
    assert_int_equal(verdict(&d, &s, 9, 3, good), NS_DIVERGE_EV_UNJUDGED);
    assert_true(ns_diverge_is_diverged(&d));
    /* The corruption undone by later commands: equal digests, healthy. */
    assert_int_equal(ns_kv_delete(s.kv, "ns", "corrupt"), 0);
    checkpoint(&d, &s, 10);
    assert_int_equal(verdict(&d, &s, 11, 10, good), NS_DIVERGE_EV_RECOVERED);
    assert_false(ns_diverge_is_diverged(&d));
    assert_int_equal(d.n_recovered, 1);
    ns_state_close(&s);
}

static void test_install_and_skip(void **state)
{
    (void)state;
    struct ns_state healthy, bad;
    struct ns_diverge d;
    struct ns_buf enc;
    assert_int_equal(ns_state_init(&healthy), 0);
    assert_int_equal(ns_state_init(&bad), 0);
    ns_diverge_init(&d);
    kv(&healthy, "a", "1");
    kv(&bad, "a", "2");
    checkpoint(&d, &bad, 4);
    assert_int_equal(verdict(&d, &bad, 5, 4, 99), NS_DIVERGE_EV_DIVERGED);
    assert_false(ns_diverge_may_snapshot(&d, 5));
    ns_buf_init(&enc);
    assert_int_equal(ns_snapshot_encode(&healthy, &enc), 0);
    /* This node applied 12 already; a copy at 10 lacks 11 and 12. */
    assert_int_equal(ns_diverge_install(&d, &bad, enc.data, enc.len, 10, 12),
                     NS_EAGAIN);
    assert_int_equal(d.health, NS_DIVERGE_DIVERGED);
    /* Undecodable bytes change nothing. */
    assert_int_equal(ns_diverge_install(&d, &bad, enc.data, enc.len - 1, 10, 8),
                     NS_EPROTO);
    assert_int_equal(d.n_installs, 0);
    assert_int_equal(ns_diverge_install(&d, &bad, enc.data, enc.len, 10, 8), 0);
    assert_int_equal(d.health, NS_DIVERGE_RECOVERING);
    assert_true(ns_diverge_is_diverged(&d));
    assert_int_equal(d.installed_at, 10);
    assert_null(ns_diverge_find(&d, 4)); /* the thrown-away state's digest */
    assert_int_equal(d.last.index, 0);
    /* 9 and 10 are inside the copy; 11 is not. */
    assert_true(ns_diverge_skips(&d, 9));
    assert_true(ns_diverge_skips(&d, 10));
    assert_false(ns_diverge_skips(&d, 11));
    /* raft would label a snapshot taken now with 8 or 9: postponed. */
    assert_false(ns_diverge_may_snapshot(&d, 9));
    assert_true(ns_diverge_may_snapshot(&d, 10));
    struct ns_buf got;
    ns_buf_init(&got);
    assert_int_equal(ns_snapshot_encode(&bad, &got), 0);
    assert_int_equal(got.len, enc.len);
    assert_memory_equal(got.data, enc.data, enc.len);
    /* The next checkpoint's verdict agrees: serving again. */
    checkpoint(&d, &bad, 12);
    uint64_t digest = 0;
    assert_int_equal(ns_snapshot_digest(&healthy, &digest), 0);
    assert_int_equal(d.last.digest, digest);
    assert_int_equal(verdict(&d, &bad, 13, 12, digest),
                     NS_DIVERGE_EV_RECOVERED);
    assert_false(ns_diverge_is_diverged(&d));
    /* A raft snapshot restore cancels any skip. */
    d.skip_through = 20;
    ns_diverge_restored(&d);
    assert_false(ns_diverge_skips(&d, 15));
    assert_int_equal(d.last.index, 0);
    ns_buf_close(&got);
    ns_buf_close(&enc);
    ns_state_close(&healthy);
    ns_state_close(&bad);
}

static void test_transfer_target(void **state)
{
    (void)state;
    struct ns_diverge d;
    ns_diverge_init(&d);
    const uint64_t voters[] = {1, 2, 3};
    assert_int_equal(ns_diverge_transfer_target(&d, 1, voters, 3), 0);
    d.healthy[0] = 1; /* self never */
    d.healthy[1] = 7; /* not a voter any more */
    d.healthy[2] = 3;
    d.n_healthy = 3;
    assert_int_equal(ns_diverge_transfer_target(&d, 1, voters, 3), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_majority_table),
        cmocka_unit_test(test_tally_one_verdict_per_checkpoint),
        cmocka_unit_test(test_tally_no_majority_closes),
        cmocka_unit_test(test_tally_newer_pending_older_open),
        cmocka_unit_test(test_tally_full_drops_oldest),
        cmocka_unit_test(test_tally_alloc_failure),
        cmocka_unit_test(test_judgement),
        cmocka_unit_test(test_install_and_skip),
        cmocka_unit_test(test_transfer_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
