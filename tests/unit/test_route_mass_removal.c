/* Removing many brokers, or many of one broker's topics, at once: the topics
 * left empty are closed up in one sweep of the topic table
 * (route_drop_topics). Differential: the route after the removal must encode
 * to the same bytes as a route where only what survives was registered. */
#include <stdlib.h>

#include "raftns/buf.h"
#include "test_route_util.h"

#define N_BROKERS 40
#define UNIQUE_PER_BROKER 60
#define SHARED_POOL 50
#define SHARED_PER_BROKER 12

static uint64_t rng_state;

static uint32_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static void broker_addr(char *out, size_t len, int b)
{
    snprintf(out, len, "127.0.0.1:%d", 10000 + b);
}

/* Broker b's registration: unique topics whose names interleave with every
 * other broker's (so removals fall all over the table) and a few shared
 * ones, chosen by the seed. */
static void build_reg(struct ns_register *r, int b, uint64_t seed)
{
    char name[32], addr[32];
    snprintf(name, sizeof name, "broker-%02d", b);
    broker_addr(addr, sizeof addr, b);
    reg_init(r, b % 2 ? "c1" : "c2", name, 0, addr, NULL, 0, 1);
    for (int t = 0; t < UNIQUE_PER_BROKER; t++) {
        char topic[32];
        snprintf(topic, sizeof topic, "T%03d-%02d", t, b);
        reg_topic(r, topic, 8, 8, 6, 0);
    }
    uint64_t saved = rng_state;
    rng_state = seed * 1000003u + (uint64_t)b;
    for (int k = 0; k < SHARED_PER_BROKER; k++) {
        char topic[32];
        snprintf(topic, sizeof topic, "S%02u-%02d", rng() % SHARED_POOL, k);
        reg_topic(r, topic, 4, 4, 6, 0);
    }
    rng_state = saved;
}

static void register_broker(struct ns_route *route, int b, uint64_t seed)
{
    struct ns_register r;
    build_reg(&r, b, seed);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
}

static void assert_same_state(const struct ns_route *got,
                              const struct ns_route *want)
{
    struct ns_buf a, b;
    ns_buf_init(&a);
    ns_buf_init(&b);
    assert_int_equal(ns_route_encode_state(got, &a), 0);
    assert_int_equal(ns_route_encode_state(want, &b), 0);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    ns_buf_close(&a);
    ns_buf_close(&b);
}

/* Expires (or unregisters) a random set of brokers in one batch. */
static void check_batch(uint64_t seed, bool expire)
{
    rng_state = seed;
    bool gone[N_BROKERS];
    struct ns_broker_ref refs[N_BROKERS];
    char addrs[N_BROKERS][32], names[N_BROKERS][32];
    size_t n_refs = 0;
    for (int b = 0; b < N_BROKERS; b++) {
        gone[b] = rng() % 3 != 0;
    }
    struct ns_route *all = ns_route_create();
    struct ns_route *survivors = ns_route_create();
    assert_non_null(all);
    assert_non_null(survivors);
    for (int b = 0; b < N_BROKERS; b++) {
        register_broker(all, b, seed);
        if (!gone[b]) {
            register_broker(survivors, b, seed);
            continue;
        }
        broker_addr(addrs[b], sizeof addrs[b], b);
        snprintf(names[b], sizeof names[b], "broker-%02d", b);
        refs[n_refs++] = (struct ns_broker_ref){b % 2 ? "c1" : "c2", addrs[b],
                                                expire ? NULL : names[b], 0};
    }
    if (expire) {
        assert_int_equal(ns_route_expire_brokers(all, refs, n_refs), 0);
    } else {
        assert_int_equal(ns_route_unregister_brokers(all, refs, n_refs), 0);
    }
    assert_same_state(all, survivors);
    /* The table is still in order: every broker registers again alike. */
    for (int b = 0; b < N_BROKERS; b++) {
        if (gone[b]) {
            register_broker(all, b, seed);
            register_broker(survivors, b, seed);
        }
    }
    assert_same_state(all, survivors);
    ns_route_destroy(all);
    ns_route_destroy(survivors);
}

static void test_expire_many(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        check_batch(seed, true);
    }
}

static void test_unregister_many(void **state)
{
    (void)state;
    for (uint64_t seed = 101; seed <= 110; seed++) {
        check_batch(seed, false);
    }
}

/* deleteTopicWithBrokerRegistration dropping most of a broker's topics in one
 * registration. */
static void test_delete_missing_many(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        struct ns_route *route = ns_route_create();
        struct ns_route *want = ns_route_create();
        assert_non_null(route);
        assert_non_null(want);
        for (int b = 0; b < 6; b++) {
            register_broker(route, b, seed);
            if (b != 3) {
                register_broker(want, b, seed);
            }
        }
        /* Broker 3 keeps a random fifth of its topics. */
        struct ns_register full, kept;
        build_reg(&full, 3, seed);
        reg_init(&kept, full.cluster, full.broker_name, 0, full.broker_addr,
                 NULL, 0, 2);
        rng_state = seed;
        for (size_t i = 0; i < full.n_topics; i++) {
            if (rng() % 5 == 0) {
                reg_topic(&kept, full.topics[i].name,
                          full.topics[i].read_queues,
                          full.topics[i].write_queues, full.topics[i].perm, 0);
            }
        }
        do_register(route, &kept, true, NULL, NULL);
        /* Twice, as route saw two registrations of broker 3. */
        do_register(want, &kept, false, NULL, NULL);
        do_register(want, &kept, false, NULL, NULL);
        assert_same_state(route, want);
        ns_register_close(&full);
        ns_register_close(&kept);
        ns_route_destroy(route);
        ns_route_destroy(want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expire_many),
        cmocka_unit_test(test_unregister_many),
        cmocka_unit_test(test_delete_missing_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
