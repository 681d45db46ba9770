/* A registration bringing many topics new to the table: they are merged into
 * the topic table in one pass (src/route/route_merge.c). The table must stay
 * sorted and hold exactly what registering the topics one at a time gives,
 * whatever the order of the topics in the request (decoded requests are
 * sorted, built ones need not be) and with repeated names (the last wins);
 * out of memory at any allocation leaves a sorted, usable table. */
#include <stdlib.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "test_route_util.h"

#define POOL 600
#define N_OLD 250
#define N_NEW 300

static uint64_t rng_state;

static uint32_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static void pool_name(char *out, size_t len, uint32_t i)
{
    /* Names of the old and the new broker interleave all over the table. */
    snprintf(out, len, "%c-topic-%04u", 'a' + (int)(i % 7), i);
}

/* The old broker: N_OLD random names of the pool. */
static void old_broker(struct ns_register *r, uint64_t seed)
{
    reg_init(r, "c1", "old", 0, "10.0.0.1:10911", NULL, 0, 1);
    rng_state = seed;
    for (int i = 0; i < N_OLD; i++) {
        char name[32];
        pool_name(name, sizeof name, rng() % POOL);
        reg_topic(r, name, 8, 8, 6, 0);
    }
}

/* The new broker's topics in request order, with repeats; queue counts tell
 * the repeats apart. */
static void new_topics(uint32_t *names, int32_t *queues, uint64_t seed)
{
    rng_state = seed * 7919u;
    for (int i = 0; i < N_NEW; i++) {
        names[i] = rng() % POOL;
        queues[i] = 1 + (int32_t)(rng() % 16);
    }
}

static void new_broker(struct ns_register *r, const uint32_t *names,
                       const int32_t *queues, int n, int64_t counter)
{
    reg_init(r, "c1", "new", 0, "10.0.0.2:10911", NULL, 0, counter);
    for (int i = 0; i < n; i++) {
        char name[32];
        pool_name(name, sizeof name, names[i]);
        reg_topic(r, name, queues[i], queues[i], 6, 0);
    }
}

static void register_and_close(struct ns_route *route, struct ns_register *r)
{
    do_register(route, r, false, NULL, NULL);
    ns_register_close(r);
}

/* Every topic name in the topic list, which follows the table's order, is
 * greater than the one before. */
static size_t assert_table_sorted(const struct ns_route *route)
{
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_route_encode_all_topics(route, &b), 0);
    assert_int_equal(ns_buf_put_u8(&b, 0), 0);
    const char *p = strstr((const char *)b.data, "\"topicList\":[");
    assert_non_null(p);
    p += strlen("\"topicList\":[");
    char prev[64] = "";
    size_t n = 0;
    while (*p == '"') {
        const char *end = strchr(p + 1, '"');
        assert_non_null(end);
        char name[64];
        assert_true((size_t)(end - p - 1) < sizeof name);
        memcpy(name, p + 1, (size_t)(end - p - 1));
        name[end - p - 1] = '\0';
        assert_true(n == 0 || strcmp(prev, name) < 0);
        strcpy(prev, name);
        n++;
        p = end + 1;
        p += *p == ',' ? 1 : 0;
    }
    ns_buf_close(&b);
    return n;
}

static void assert_same_routes(const struct ns_route *a,
                               const struct ns_route *b)
{
    for (uint32_t i = 0; i < POOL; i++) {
        char name[32];
        pool_name(name, sizeof name, i);
        char *x = route_json(a, name, NS_JSON_STANDARD);
        char *y = route_json(b, name, NS_JSON_STANDARD);
        assert_true((x == NULL) == (y == NULL));
        if (x != NULL) {
            assert_string_equal(x, y);
        }
        ns_free(x);
        ns_free(y);
    }
}

static void test_merged_like_one_at_a_time(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        uint32_t names[N_NEW];
        int32_t queues[N_NEW];
        new_topics(names, queues, seed);
        struct ns_route *merged = ns_route_create();
        struct ns_route *single = ns_route_create();
        assert_non_null(merged);
        assert_non_null(single);
        struct ns_register r;
        old_broker(&r, seed);
        register_and_close(merged, &r);
        old_broker(&r, seed);
        register_and_close(single, &r);
        new_broker(&r, names, queues, N_NEW, 1);
        register_and_close(merged, &r);
        /* One more topic per registration (changed DataVersion: each writes
         * all its topics, so a repeated name takes its latest queue count). */
        for (int n = 1; n <= N_NEW; n++) {
            new_broker(&r, names, queues, n, n);
            register_and_close(single, &r);
        }
        size_t n_topics = assert_table_sorted(merged);
        assert_int_equal(n_topics, assert_table_sorted(single));
        assert_true(n_topics > N_OLD);
        assert_same_routes(merged, single);
        ns_route_destroy(merged);
        ns_route_destroy(single);
    }
}

/* Out of memory at each allocation of the registration: it fails or
 * succeeds whole as far as the table's order goes, and the next registration
 * gives the full result. */
static void test_out_of_memory_keeps_the_table_sorted(void **state)
{
    (void)state;
    uint32_t names[N_NEW];
    int32_t queues[N_NEW];
    new_topics(names, queues, 3);
    struct ns_route *want = ns_route_create();
    assert_non_null(want);
    struct ns_register r;
    old_broker(&r, 3);
    register_and_close(want, &r);
    new_broker(&r, names, queues, N_NEW, 1);
    register_and_close(want, &r);
    bool succeeded = false;
    for (long k = 0; !succeeded; k++) {
        struct ns_route *route = ns_route_create();
        assert_non_null(route);
        old_broker(&r, 3);
        register_and_close(route, &r);
        new_broker(&r, names, queues, N_NEW, 1);
        struct ns_register_result res;
        ns_alloc_fail_at(k, 0);
        int rv = ns_route_register_broker(route, &r, false, &res);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        succeeded = rv == 0;
        if (rv == 0) {
            ns_register_result_close(&res);
        }
        assert_table_sorted(route);
        register_and_close(route, &r);
        new_broker(&r, names, queues, N_NEW, 2); /* a full pass again */
        register_and_close(route, &r);
        assert_same_routes(route, want);
        ns_route_destroy(route);
    }
    ns_route_destroy(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merged_like_one_at_a_time),
        cmocka_unit_test(test_out_of_memory_keeps_the_table_sorted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
