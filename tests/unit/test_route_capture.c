/* Captures of the route (include/raftns/route.h ns_route_capture_begin): the
 * bytes put together from the head, the steps and the tail must be exactly
 * ns_route_encode_state's bytes at the capture's beginning, whatever
 * registrations, unregistrations, permission changes and topic deletions
 * happen between the steps, and however small the steps are. Out of memory
 * while a change saves an entry loses the capture, never the route. */
#include <stdlib.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "test_route_util.h"

#define N_BROKERS 5
#define N_TOPICS 40

static uint64_t rng_state;

static uint32_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static void broker_addr(char *out, size_t len, int b)
{
    snprintf(out, len, "10.0.0.%d:10911", b + 1);
}

/* Broker b's registration of a random half of the topics with random queue
 * counts. */
static void random_request(struct ns_register *r, int b, int64_t counter)
{
    char name[32], addr[32];
    snprintf(name, sizeof name, "broker-%d", b);
    broker_addr(addr, sizeof addr, b);
    reg_init(r, "c1", name, 0, addr, NULL, 0, counter);
    char own[32];
    snprintf(own, sizeof own, "own-%d", b); /* never a single topic */
    reg_topic(r, own, 1, 1, 6, 0);
    for (int t = 0; t < N_TOPICS; t++) {
        if (rng() % 2) {
            char tn[32];
            snprintf(tn, sizeof tn, "topic-%02d", t);
            int32_t q = 1 + (int32_t)(rng() % 8);
            reg_topic(r, tn, q, q, 6, 0);
        }
    }
}

/* Registers it; delete_missing drops the broker's other topics
 * (deleteTopicWithBrokerRegistration). 0 or NS_ENOMEM. */
static int register_request(struct ns_route *route, struct ns_register *r,
                            bool delete_missing)
{
    struct ns_register_result res;
    int rv = ns_route_register_broker(route, r, delete_missing, &res);
    if (rv == 0) {
        ns_register_result_close(&res);
    }
    ns_register_close(r);
    return rv;
}

static void random_register(struct ns_route *route, int b, int64_t counter,
                            bool delete_missing)
{
    struct ns_register r;
    random_request(&r, b, counter);
    assert_int_equal(register_request(route, &r, delete_missing), 0);
}

/* One random change; returns its result (0, or NS_ENOMEM under injection). */
static int random_change(struct ns_route *route, int64_t *counter)
{
    int b = (int)(rng() % N_BROKERS);
    char name[32], addr[32], tn[32];
    snprintf(name, sizeof name, "broker-%d", b);
    broker_addr(addr, sizeof addr, b);
    int32_t count;
    struct ns_broker_ref ref = {"c1", addr, name, 0};
    switch (rng() % 6) {
    case 0:
        return ns_route_unregister_brokers(route, &ref, 1);
    case 1:
        return ns_route_wipe_write_perm(route, name, &count);
    case 2:
        return ns_route_add_write_perm(route, name, &count);
    case 3:
        snprintf(tn, sizeof tn, "topic-%02d", (int)(rng() % N_TOPICS));
        return ns_route_delete_topic(route, tn, NULL);
    default:
        random_register(route, b, ++counter[b], rng() % 4 == 0);
        return 0;
    }
}

static void fill(struct ns_route *route, int64_t *counter)
{
    for (int b = 0; b < N_BROKERS; b++) {
        random_register(route, b, ++counter[b], false);
    }
}

/* Runs a capture to its end with steps of 1 to max_step topics and up to
 * max_changes changes between steps; the bytes put together must be what
 * the route encoded at the beginning. */
static void capture_while_changing(uint64_t seed, size_t max_step,
                                   int max_changes)
{
    rng_state = seed;
    struct ns_route *route = ns_route_create();
    assert_non_null(route);
    int64_t counter[N_BROKERS] = {0};
    fill(route, counter);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(random_change(route, counter), 0);
    }
    struct ns_buf want, head, tail, steps;
    state_of(route, &want);
    ns_buf_init(&head);
    ns_buf_init(&tail);
    ns_buf_init(&steps);
    struct ns_route_capture *c;
    assert_int_equal(ns_route_capture_begin(route, &head, &tail, &c), 0);
    bool done = false;
    while (!done) {
        size_t step = 1 + rng() % max_step;
        assert_int_equal(ns_route_capture_step(route, c, step, &steps, &done),
                         0);
        int changes = (int)(rng() % (unsigned)(max_changes + 1));
        for (int i = 0; i < changes; i++) {
            assert_int_equal(random_change(route, counter), 0);
        }
    }
    ns_route_capture_end(route, c);
    ns_buf_append(&head, steps.data, steps.len);
    ns_buf_append(&head, tail.data, tail.len);
    assert_int_equal(head.err, 0);
    assert_true(same_state(&head, &want));
    /* The route itself encodes as it is now, and a new capture of it too. */
    struct ns_buf now, again, again_tail;
    state_of(route, &now);
    ns_buf_init(&again);
    ns_buf_init(&again_tail);
    assert_int_equal(ns_route_capture_begin(route, &again, &again_tail, &c), 0);
    assert_int_equal(ns_route_capture_step(route, c, SIZE_MAX, &again, &done),
                     0);
    assert_true(done);
    ns_route_capture_end(route, c);
    ns_buf_append(&again, again_tail.data, again_tail.len);
    assert_true(same_state(&again, &now));
    ns_buf_close(&want);
    ns_buf_close(&head);
    ns_buf_close(&tail);
    ns_buf_close(&steps);
    ns_buf_close(&now);
    ns_buf_close(&again);
    ns_buf_close(&again_tail);
    ns_route_destroy(route);
}

static void test_capture_is_the_state_at_its_beginning(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        capture_while_changing(seed, 1 + seed % 4, (int)(seed % 5));
    }
}

static void test_one_step_without_changes(void **state)
{
    (void)state;
    capture_while_changing(99, SIZE_MAX, 0);
}

/* Two captures begun at different moments, their steps interleaved with each
 * other and with changes: each gives the state at its own beginning, and a
 * third cannot begin while they last. */
static void test_two_captures_at_once(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 30; seed++) {
        rng_state = seed * 31;
        struct ns_route *route = ns_route_create();
        assert_non_null(route);
        int64_t counter[N_BROKERS] = {0};
        fill(route, counter);
        struct ns_buf want[2], head[2], tail[2];
        struct ns_route_capture *c[2];
        bool done[2] = {false, false};
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < 5; i++) {
                assert_int_equal(random_change(route, counter), 0);
            }
            state_of(route, &want[k]);
            ns_buf_init(&head[k]);
            ns_buf_init(&tail[k]);
            assert_int_equal(
                ns_route_capture_begin(route, &head[k], &tail[k], &c[k]), 0);
        }
        struct ns_buf other;
        struct ns_route_capture *third = NULL;
        ns_buf_init(&other);
        assert_int_equal(ns_route_capture_begin(route, &other, &other, &third),
                         NS_EBUSY);
        assert_null(third);
        ns_buf_close(&other);
        while (!done[0] || !done[1]) {
            int k = (int)(rng() % 2);
            if (!done[k]) {
                assert_int_equal(ns_route_capture_step(route, c[k],
                                                       1 + rng() % 3, &head[k],
                                                       &done[k]),
                                 0);
            }
            assert_int_equal(random_change(route, counter), 0);
        }
        for (int k = 0; k < 2; k++) {
            ns_route_capture_end(route, c[k]);
            ns_buf_append(&head[k], tail[k].data, tail[k].len);
            assert_true(same_state(&head[k], &want[k]));
            ns_buf_close(&want[k]);
            ns_buf_close(&head[k]);
            ns_buf_close(&tail[k]);
        }
        ns_route_destroy(route);
    }
}

/* A route filled from seed with a capture begun over it. */
struct captured {
    struct ns_route *route;
    int64_t counter[N_BROKERS];
    struct ns_buf head, tail, steps;
    struct ns_route_capture *c;
};

static void captured_begin(struct captured *x, uint64_t seed)
{
    rng_state = seed;
    memset(x, 0, sizeof *x);
    x->route = ns_route_create();
    assert_non_null(x->route);
    fill(x->route, x->counter);
    ns_buf_init(&x->head);
    ns_buf_init(&x->tail);
    ns_buf_init(&x->steps);
    assert_int_equal(
        ns_route_capture_begin(x->route, &x->head, &x->tail, &x->c), 0);
}

/* Destroys the route (ending a capture still under way) and the buffers. */
static void captured_close(struct captured *x)
{
    ns_route_destroy(x->route);
    ns_buf_close(&x->head);
    ns_buf_close(&x->tail);
    ns_buf_close(&x->steps);
}

/* A change that fails to save an entry (out of memory) loses the capture:
 * its next step says so, and the route is as the change left it. */
static void test_out_of_memory_while_saving(void **state)
{
    (void)state;
    bool lost = false, kept = false;
    for (long k = 0; k < 400 && !(lost && kept); k++) {
        struct captured x;
        captured_begin(&x, 7);
        struct ns_register r;
        random_request(&r, 0, ++x.counter[0]);
        ns_alloc_fail_at(k, 0);
        int rv = register_request(x.route, &r, false);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        bool done = false;
        int step_rv =
            ns_route_capture_step(x.route, x.c, SIZE_MAX, &x.steps, &done);
        assert_true(step_rv == 0 || step_rv == NS_ENOMEM);
        lost |= step_rv == NS_ENOMEM;
        kept |= step_rv == 0;
        assert_true(step_rv != 0 || done);
        ns_route_capture_end(x.route, x.c);
        /* The route still encodes. */
        struct ns_buf now;
        state_of(x.route, &now);
        ns_buf_close(&now);
        captured_close(&x);
    }
    assert_true(lost);
    assert_true(kept);
}

/* A route destroyed with a capture under way frees it (ASan, valgrind). */
static void test_destroy_during_a_capture(void **state)
{
    (void)state;
    struct captured x;
    captured_begin(&x, 3);
    bool done;
    assert_int_equal(ns_route_capture_step(x.route, x.c, 3, &x.steps, &done),
                     0);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(random_change(x.route, x.counter), 0);
    }
    captured_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_is_the_state_at_its_beginning),
        cmocka_unit_test(test_one_step_without_changes),
        cmocka_unit_test(test_two_captures_at_once),
        cmocka_unit_test(test_out_of_memory_while_saving),
        cmocka_unit_test(test_destroy_during_a_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
