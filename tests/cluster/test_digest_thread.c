/* Cluster test: checkpoint digests hashed by the digest thread
 * (raft/node/digest_thread.c). Its digest is ns_snapshot_digest's of the state
 * at the start, whatever is applied while the thread hashes; abandoned
 * digests never come back as a later one's result; the thread stops with a
 * hash in progress. */
#include "fixture_util.h"
#include "raftns/digest_thread.h"

static void apply_random(struct ns_state *s, uint64_t *st, unsigned n)
{
    struct ns_command c;
    for (unsigned i = 0; i < n; i++) {
        fx_cmd_random(&c, st);
        assert_int_equal(ns_fsm_apply(s, &c, NULL), 0);
        ns_command_close(&c);
    }
}

static uint64_t digest_of(const struct ns_state *s)
{
    uint64_t d = 0;
    assert_int_equal(ns_snapshot_digest(s, &d), 0);
    return d;
}

static void test_digest_is_the_state_at_start(void **state)
{
    (void)state;
    uint64_t st = fx_seed("digest_thread_start");
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    struct ns_digest_thread *t = NULL;
    assert_int_equal(ns_digest_thread_create(1u << 20, &t), 0);
    uint64_t got = 0;
    assert_int_equal(ns_digest_thread_collect(t, true, &got), NS_EINVAL);
    for (unsigned round = 0; round < 20; round++) {
        apply_random(&s, &st, 50);
        uint64_t want = digest_of(&s);
        assert_int_equal(ns_digest_thread_start(t, &s), 0);
        apply_random(&s, &st, 50); /* the loop goes on applying */
        assert_true(digest_of(&s) != want);
        if (round % 2 == 0) {
            int rv;
            while ((rv = ns_digest_thread_collect(t, false, &got)) ==
                   NS_EAGAIN) { /* polled, as the loop does */
            }
            assert_int_equal(rv, 0);
        } else {
            assert_int_equal(ns_digest_thread_collect(t, true, &got), 0);
        }
        assert_true(got == want);
        assert_false(ns_digest_thread_is_done(t)); /* taken */
        assert_int_equal(ns_digest_thread_collect(t, true, &got), NS_EINVAL);
    }
    ns_digest_thread_destroy(t);
    ns_state_close(&s);
}

static void test_abandoned_digest_is_never_collected(void **state)
{
    (void)state;
    uint64_t st = fx_seed("digest_thread_abandon");
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    /* keep nothing: every buffer is released after its hash */
    struct ns_digest_thread *t = NULL;
    assert_int_equal(ns_digest_thread_create(0, &t), 0);
    for (unsigned round = 0; round < 50; round++) {
        apply_random(&s, &st, 20);
        assert_int_equal(ns_digest_thread_start(t, &s), 0);
        ns_digest_thread_abandon(t);
        uint64_t got = 0;
        assert_int_equal(ns_digest_thread_collect(t, true, &got), NS_EINVAL);
        apply_random(&s, &st, 20);
        uint64_t want = digest_of(&s);
        assert_int_equal(ns_digest_thread_start(t, &s), 0);
        assert_int_equal(ns_digest_thread_collect(t, true, &got), 0);
        assert_true(got == want);
        /* a result left uncollected is superseded by the next start */
        assert_int_equal(ns_digest_thread_start(t, &s), 0);
        while (!ns_digest_thread_is_done(t)) {
        }
        apply_random(&s, &st, 5);
        want = digest_of(&s);
        assert_int_equal(ns_digest_thread_start(t, &s), 0);
        assert_int_equal(ns_digest_thread_collect(t, true, &got), 0);
        assert_true(got == want);
        /* a released buffer (the state went to forks) is made again */
        ns_digest_thread_release(t);
        if (round % 2 == 0) {
            assert_int_equal(ns_digest_thread_start(t, &s), 0);
            ns_digest_thread_release(t); /* waits for the hash */
            assert_int_equal(ns_digest_thread_collect(t, true, &got), 0);
            assert_true(got == want);
        }
    }
    ns_digest_thread_destroy(t);
    ns_state_close(&s);
}

static void test_destroy_with_a_hash_in_flight(void **state)
{
    (void)state;
    uint64_t st = fx_seed("digest_thread_destroy");
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    apply_random(&s, &st, 300);
    for (unsigned i = 0; i < 20; i++) {
        struct ns_digest_thread *t = NULL;
        assert_int_equal(ns_digest_thread_create(1u << 20, &t), 0);
        assert_int_equal(ns_digest_thread_start(t, &s), 0);
        ns_digest_thread_destroy(t); /* joins; ASan finds a leak or a race */
    }
    ns_digest_thread_destroy(NULL);
    ns_state_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest_is_the_state_at_start),
        cmocka_unit_test(test_abandoned_digest_is_never_collected),
        cmocka_unit_test(test_destroy_with_a_hash_in_flight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
