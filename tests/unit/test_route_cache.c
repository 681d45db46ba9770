/* The cache of encoded TopicRouteData replies (route.h
 * ns_route_cached_topic_route): hits do no encoding, and exactly the mutations
 * that touch a topic or a group it uses invalidate. */
#include "raftns/alloc.h"
#include "test_route_util.h"

struct fixture {
    struct ns_route *route;
};

static int setup(void **state)
{
    struct ns_route *route = ns_route_create();
    struct ns_register r;

    if (route == NULL) {
        return -1;
    }
    register_with(route, reg_a0, 0);
    register_with(route, reg_b0, 0);
    reg_init(&r, "c1", "broker-c", 0, "127.0.0.1:40911", NULL, 0, 1);
    reg_topic(&r, "TopicC", 4, 4, 6, 0);
    reg_topic(&r, "TopicD", 4, 4, 6, 0);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    *state = route;
    return 0;
}

static int teardown(void **state)
{
    ns_route_destroy(*state);
    return 0;
}

/* Reads TopicA (standard) through the cache and checks it equals a fresh
 * encoding. */
static void read_a(struct ns_route *route, uint64_t gen)
{
    struct ns_route_query q = {.topic = "TopicA", .flavour = NS_JSON_STANDARD};
    const uint8_t *body;
    size_t len;
    uint64_t before = ns_route_n_route_encodes(route);
    char *fresh;

    assert_int_equal(cached_route_body(route, &q, gen, &body, &len), 0);
    fresh = route_json(route, "TopicA", NS_JSON_STANDARD);
    assert_int_equal(len, strlen(fresh));
    assert_memory_equal(body, fresh, len);
    ns_free(fresh);
    /* Only route_json encoded: the cached read was a hit or counted before. */
    assert_true(ns_route_n_route_encodes(route) - before <= 2);
}

static uint64_t cached_read(struct ns_route *route, const char *topic,
                            enum ns_json_flavour flavour, uint64_t gen)
{
    struct ns_route_query q = {.topic = topic, .flavour = flavour};
    const uint8_t *body;
    size_t len;
    uint64_t before = ns_route_n_route_encodes(route);

    assert_int_equal(cached_route_body(route, &q, gen, &body, &len), 0);
    assert_true(len > 0);
    return ns_route_n_route_encodes(route) - before;
}

static void test_hits_do_not_encode(void **state)
{
    struct ns_route *route = *state;
    uint64_t base = ns_route_n_route_encodes(route);

    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 1);
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 0);
    }
    assert_int_equal(ns_route_n_route_encodes(route), base + 1);
    /* The other flavour is its own entry; a new context generation re-encodes.
     */
    assert_int_equal(cached_read(route, "TopicA", NS_JSON_LEGACY, 0), 1);
    assert_int_equal(cached_read(route, "TopicA", NS_JSON_LEGACY, 0), 0);
    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 1), 1);
    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 1), 0);
    read_a(route, 1);
}

/* A topic gets its cache entries at its first read (route_internal.h): out of
 * memory at any allocation of that read answers the right route or fails
 * cleanly, and the reads after it are answered right and then cached. */
static void test_first_read_out_of_memory(void **state)
{
    struct ns_route *route = *state;
    char *want = route_json(route, "TopicC", NS_JSON_STANDARD);
    struct ns_route_query q = {.topic = "TopicC", .flavour = NS_JSON_STANDARD};
    long before = ns_alloc_count();
    assert_int_equal(cached_read(route, "TopicC", NS_JSON_STANDARD, 0), 1);
    long n_allocs = ns_alloc_count() - before;
    assert_true(n_allocs > 1); /* the entries, the body, ... */
    for (long k = 0; k < n_allocs; k++) {
        void *fresh = NULL;
        assert_int_equal(setup(&fresh), 0);
        const uint8_t *body;
        size_t len;
        ns_alloc_fail_at(k, 0);
        int rv = cached_route_body(fresh, &q, 0, &body, &len);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        if (rv == 0) {
            assert_int_equal(len, strlen(want));
            assert_memory_equal(body, want, len);
        }
        assert_int_equal(cached_route_body(fresh, &q, 0, &body, &len), 0);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(body, want, len);
        assert_int_equal(cached_read(fresh, "TopicC", NS_JSON_STANDARD, 0), 0);
        teardown(&fresh);
    }
    ns_free(want);
}

static void test_unrelated_changes_keep_entry(void **state)
{
    struct ns_route *route = *state;
    struct ns_queue_data qd = {"broker-c", 8, 8, 6, 0};
    struct ns_register r;
    int32_t n;

    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 1);
    /* Topic C / broker-c only. */
    assert_int_equal(ns_route_register_topic(route, "TopicC", &qd, 1), 0);
    assert_int_equal(ns_route_wipe_write_perm(route, "broker-c", &n), 0);
    assert_int_equal(ns_route_delete_topic(route, "TopicD", NULL), 0);
    reg_init(&r, "c1", "broker-c", 1, "127.0.0.1:40921", NULL, 0, 1);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    unregister_one(route, "c1", "127.0.0.1:40921", "broker-c", 1);
    /* A re-registration that changes nothing (the heartbeat path). */
    reg_a0(&r, 0);
    assert_true(ns_route_is_unchanged_registration(route, &r, false));
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 0);
    read_a(route, 0);
}

static void test_group_change_invalidates(void **state)
{
    struct ns_route *route = *state;

    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 1);
    register_with(route, reg_a1, 0);
    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 1);
    read_a(route, 0);
    /* A slave leaving changes the group too. */
    unregister_one(route, "c1", "127.0.0.1:10921", "broker-a", 1);
    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 1);
    /* Zone change of broker-b, which TopicA uses. */
    {
        struct ns_register r;
        reg_b0(&r, 0);
        reg_zone(&r, "z");
        do_register(route, &r, false, NULL, NULL);
        ns_register_close(&r);
    }
    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 1);
    read_a(route, 0);
}

static void test_topic_change_invalidates(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;
    int32_t n;

    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 1);
    assert_int_equal(ns_route_wipe_write_perm(route, "broker-a", &n), 0);
    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 1);
    read_a(route, 0);
    /* wipe again: nothing changes, the entry stays. */
    assert_int_equal(ns_route_wipe_write_perm(route, "broker-a", &n), 0);
    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 0);
    /* New DataVersion with other queue counts. */
    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10911", "127.0.0.1:10912", 0,
             2);
    reg_topic(&r, "TopicA", 8, 8, 6, 0);
    reg_topic(&r, "TopicB", 4, 4, 6, 0);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 1);
    read_a(route, 0);
    /* Deleting and removing the topic. */
    assert_int_equal(ns_route_delete_topic(route, "TopicA", "c1"), 0);
    {
        struct ns_route_query q = {.topic = "TopicA",
                                   .flavour = NS_JSON_STANDARD};
        const uint8_t *body;
        size_t len;
        assert_int_equal(cached_route_body(route, &q, 0, &body, &len),
                         NS_ENOTFOUND);
        q.topic = NULL;
        assert_int_equal(cached_route_body(route, &q, 0, &body, &len),
                         NS_ENOTFOUND);
    }
}

static void test_zone_bypasses_cache(void **state)
{
    struct ns_route *route = *state;
    struct ns_route_query q = {
        .topic = "TopicA", .flavour = NS_JSON_STANDARD, .zone_name = "z"};
    const uint8_t *body;
    size_t len;
    uint64_t before = ns_route_n_route_encodes(route);

    for (int i = 0; i < 3; i++) {
        assert_int_equal(cached_route_body(route, &q, 0, &body, &len), 0);
        /* Groups with a master outside the zone are dropped, with their queue
         * data. */
        assert_int_equal(len,
                         strlen("{\"brokerDatas\":[],\"filterServerTable\":{},"
                                "\"queueDatas\":[]}"));
        assert_memory_equal(
            body,
            "{\"brokerDatas\":[],\"filterServerTable\":{},\"queueDatas\":[]}",
            len);
    }
    assert_int_equal(ns_route_n_route_encodes(route), before + 3);
}

/* Expiring the broker of a group the topic uses invalidates; the topic then
 * disappears. */
static void test_expire_invalidates(void **state)
{
    struct ns_route *route = *state;
    struct ns_broker_ref ref = {"c1", "127.0.0.1:20911", NULL, 0};

    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 1);
    assert_int_equal(ns_route_expire_brokers(route, &ref, 1), 0);
    assert_int_equal(cached_read(route, "TopicA", NS_JSON_STANDARD, 0), 1);
    read_a(route, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hits_do_not_encode, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_first_read_out_of_memory, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unrelated_changes_keep_entry,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_change_invalidates, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_topic_change_invalidates, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_zone_bypasses_cache, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_expire_invalidates, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
