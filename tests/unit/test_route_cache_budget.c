/* The reply cache's memory (route.h ns_route_set_cache_budget,
 * ns_route_cache_stats): it never holds more than its byte budget, evicts
 * the least recently used body first, stores byte-identical replies once,
 * keeps the reply shapes of old and new clients apart, and a body a caller
 * still references outlives its eviction. */
#include "test_route_util.h"

#define N_DISTINCT 9 /* topics T1..T9, each with its own queue count */
#define N_SAME 10    /* topics S0..S9, all alike */

static int setup(void **state)
{
    struct ns_route *route = ns_route_create();
    struct ns_register r;
    char name[16];

    if (route == NULL) {
        return -1;
    }
    reg_init(&r, "c1", "bk", 0, "127.0.0.1:10911", NULL, 0, 1);
    for (int i = 1; i <= N_DISTINCT; i++) {
        snprintf(name, sizeof name, "T%d", i);
        reg_topic(&r, name, i, 4, 6, 0);
    }
    for (int i = 0; i < N_SAME; i++) {
        snprintf(name, sizeof name, "S%d", i);
        reg_topic(&r, name, 8, 8, 6, 0);
    }
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

static struct ns_route_cache_stats stats_of(const struct ns_route *route)
{
    struct ns_route_cache_stats s;
    ns_route_cache_stats(route, &s);
    return s;
}

/* Reads topic (standard JSON, 5.x shape unless omit_5x) through the cache,
 * checks the body against a fresh encoding and returns how many encodings
 * the cached read did (0: a hit). */
static uint64_t read_q(struct ns_route *route, const char *topic, bool omit_5x)
{
    struct ns_route_query q = {
        .topic = topic, .flavour = NS_JSON_STANDARD, .omit_5x = omit_5x};
    struct ns_rcbuf *body = NULL;
    uint64_t before = ns_route_n_route_encodes(route);
    uint64_t encodes;
    char *fresh;

    assert_int_equal(ns_route_cached_topic_route(route, &q, 0, &body), 0);
    encodes = ns_route_n_route_encodes(route) - before;
    fresh = route_json_q(route, &q);
    assert_non_null(fresh);
    assert_int_equal(body->len, strlen(fresh));
    assert_memory_equal(body->data, fresh, body->len);
    ns_free(fresh);
    return encodes;
}

static uint64_t read_t(struct ns_route *route, int i)
{
    char name[16];
    snprintf(name, sizeof name, "T%d", i);
    return read_q(route, name, false);
}

/* What one cached body of a T topic costs in the budget. */
static size_t one_cost(struct ns_route *route)
{
    size_t before = stats_of(route).bytes;
    assert_int_equal(read_t(route, 1), 1);
    assert_true(stats_of(route).bytes > before);
    return stats_of(route).bytes - before;
}

static void test_lru_evicts_least_recent(void **state)
{
    struct ns_route *route = *state;
    size_t cost = one_cost(route); /* T1 cached */

    ns_route_set_cache_budget(route, 3 * cost);
    assert_int_equal(read_t(route, 2), 1);
    assert_int_equal(read_t(route, 3), 1);
    assert_int_equal(stats_of(route).bytes, 3 * cost);
    assert_int_equal(stats_of(route).evictions, 0);
    /* T1 becomes the most recent, so T2 is the oldest when T4 needs room. */
    assert_int_equal(read_t(route, 1), 0);
    assert_int_equal(read_t(route, 4), 1);
    assert_int_equal(stats_of(route).evictions, 1);
    assert_int_equal(stats_of(route).bytes, 3 * cost);
    assert_int_equal(read_t(route, 1), 0);
    assert_int_equal(read_t(route, 3), 0);
    assert_int_equal(read_t(route, 4), 0);
    assert_int_equal(read_t(route, 2), 1); /* evicted: encoded again */
    assert_int_equal(stats_of(route).evictions, 2);
}

static void test_never_over_budget(void **state)
{
    struct ns_route *route = *state;
    size_t cost = one_cost(route);
    size_t budget = 5 * cost / 2;
    uint64_t seed = 12345;
    uint64_t hits = 0, misses = 0;

    ns_route_set_cache_budget(route, budget);
    for (int k = 0; k < 500; k++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        uint64_t enc = read_t(route, 1 + (int)((seed >> 33) % N_DISTINCT));
        hits += enc == 0;
        misses += enc;
        assert_true(stats_of(route).bytes <= budget);
        assert_true(stats_of(route).n_bodies <= 2);
    }
    struct ns_route_cache_stats s = stats_of(route);
    assert_int_equal(s.budget, budget);
    assert_true(s.evictions > 0);
    assert_true(hits > 0);
    /* Every read is counted once, as a hit or a miss (one_cost's miss too). */
    assert_int_equal(s.hits, hits);
    assert_int_equal(s.misses, misses + 1);
}

static void test_identical_bodies_stored_once(void **state)
{
    struct ns_route *route = *state;
    char name[16];

    for (int i = 0; i < N_SAME; i++) {
        snprintf(name, sizeof name, "S%d", i);
        assert_int_equal(read_q(route, name, false), 1);
    }
    struct ns_route_cache_stats s = stats_of(route);
    assert_int_equal(s.n_bodies, 1);
    assert_int_equal(s.shared, N_SAME - 1);
    assert_int_equal(s.misses, N_SAME);
    for (int i = 0; i < N_SAME; i++) {
        snprintf(name, sizeof name, "S%d", i);
        assert_int_equal(read_q(route, name, false), 0);
    }
    assert_int_equal(stats_of(route).hits, N_SAME);
    /* A change to one topic leaves the others on the shared body. */
    struct ns_queue_data qd = {"bk", 2, 2, 6, 0};
    assert_int_equal(ns_route_register_topic(route, "S0", &qd, 1), 0);
    assert_int_equal(read_q(route, "S1", false), 0);
    assert_int_equal(read_q(route, "S0", false), 1);
    assert_int_equal(stats_of(route).n_bodies, 2);
}

static void test_old_client_shape(void **state)
{
    struct ns_route *route = *state;
    struct ns_route_query q = {
        .topic = "T1", .flavour = NS_JSON_STANDARD, .omit_5x = true};
    struct ns_rcbuf *body = NULL;
    const char *java_498 =
        "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\"},"
        "\"brokerName\":\"bk\",\"cluster\":\"c1\"}],\"filterServerTable\":{},"
        "\"queueDatas\":[{\"brokerName\":\"bk\",\"perm\":6,\"readQueueNums\":1,"
        "\"topicSysFlag\":0,\"writeQueueNums\":4}]}";

    assert_int_equal(read_q(route, "T1", false), 1);
    assert_int_equal(read_q(route, "T1", true), 1); /* its own entry */
    assert_int_equal(read_q(route, "T1", false), 0);
    assert_int_equal(read_q(route, "T1", true), 0);
    assert_int_equal(ns_route_cached_topic_route(route, &q, 0, &body), 0);
    assert_int_equal(body->len, strlen(java_498));
    assert_memory_equal(body->data, java_498, body->len);
    q.omit_5x = false;
    assert_int_equal(ns_route_cached_topic_route(route, &q, 0, &body), 0);
    assert_int_equal(body->len,
                     strlen(java_498) + strlen(",\"enableActingMaster"
                                               "\":false"));
    assert_int_equal(stats_of(route).n_bodies, 2);
}

static void test_over_budget_served_uncached(void **state)
{
    struct ns_route *route = *state;
    size_t cost = one_cost(route);

    ns_route_set_cache_budget(route, cost / 2);
    assert_int_equal(read_t(route, 2), 1);
    assert_int_equal(read_t(route, 2), 1);
    struct ns_route_cache_stats s = stats_of(route);
    assert_int_equal(s.uncached, 2);
    /* T1's body stays until an insertion needs room; nothing new was stored. */
    assert_int_equal(s.n_bodies, 1);
}

static void test_referenced_body_outlives_eviction(void **state)
{
    struct ns_route *route = *state;
    struct ns_route_query q = {.topic = "T5", .flavour = NS_JSON_STANDARD};
    struct ns_rcbuf *body = NULL;
    char *copy;

    assert_int_equal(ns_route_cached_topic_route(route, &q, 0, &body), 0);
    ns_rcbuf_ref(body); /* what a connection does until its write ends */
    copy = ns_strndup((const char *)body->data, body->len);
    assert_non_null(copy);
    assert_int_equal(ns_route_delete_topic(route, "T5", NULL), 0);
    assert_int_equal(stats_of(route).n_bodies, 0);
    assert_int_equal(body->refs, 1);
    assert_memory_equal(body->data, copy, body->len);
    ns_rcbuf_unref(body);
    ns_free(copy);
}

static void test_budget_automatic_and_restored(void **state)
{
    struct ns_route *route = *state;
    struct ns_route *fresh = ns_route_create();

    assert_non_null(fresh);
    assert_int_equal(stats_of(route).budget, NS_ROUTE_CACHE_MIN_BYTES);
    assert_true(ns_route_state_bytes(route) > 0);
    ns_route_set_cache_budget(route, 12345);
    assert_int_equal(read_t(route, 1), 1);
    /* A snapshot restore's new route keeps this node's setting and counts. */
    ns_route_continue_epoch(fresh, route);
    assert_int_equal(stats_of(fresh).budget, 12345);
    assert_int_equal(stats_of(fresh).misses, 1);
    ns_route_destroy(fresh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lru_evicts_least_recent, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_never_over_budget, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_identical_bodies_stored_once,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_client_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_over_budget_served_uncached, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_referenced_body_outlives_eviction,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_budget_automatic_and_restored,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
