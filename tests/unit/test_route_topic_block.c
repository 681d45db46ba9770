/* A topic entry keeps its first queue data and its queue-data list inside its
 * own allocation until it needs more (src/route/route_topic.c,
 * route_topic_new): brokers joining and leaving a topic in any order must leave
 * exactly their queue data listed, the slot must be reused once free, and out
 * of memory when a topic gets its second broker must leave the first one
 * intact. */
#include <stdlib.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "test_route_util.h"

#define N_BROKERS 6
#define N_TOPICS 8

static uint64_t rng_state;

static uint32_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static void broker_name(char *out, size_t len, int b)
{
    snprintf(out, len, "broker-%d", b);
}

static void broker_addr(char *out, size_t len, int b)
{
    snprintf(out, len, "10.0.0.%d:10911", b + 1);
}

static void topic_name(char *out, size_t len, int t)
{
    snprintf(out, len, "topic-%d", t);
}

/* What the topic's queueDatas must say: each broker's queue data by name
 * (queues[b] = 0: none). NULL when no broker has the topic. */
static char *expected_queue_datas(const int32_t *queues)
{
    struct ns_buf b;
    ns_buf_init(&b);
    ns_buf_append_str(&b, "\"queueDatas\":[");
    bool any = false;
    for (int i = 0; i < N_BROKERS; i++) {
        if (queues[i] != 0) {
            ns_buf_printf(&b,
                          "%s{\"brokerName\":\"broker-%d\",\"perm\":6,"
                          "\"readQueueNums\":%d,\"topicSysFlag\":0,"
                          "\"writeQueueNums\":%d}",
                          any ? "," : "", i, queues[i], queues[i]);
            any = true;
        }
    }
    ns_buf_append_str(&b, "]");
    char *s = buf_string(&b);
    if (!any) {
        ns_free(s);
        return NULL;
    }
    return s;
}

static void assert_topic(const struct ns_route *route, int t,
                         const int32_t *queues)
{
    char name[32];
    topic_name(name, sizeof name, t);
    char *want = expected_queue_datas(queues);
    char *got = route_json(route, name, NS_JSON_STANDARD);
    if (want == NULL) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    const char *qds = strstr(got, "\"queueDatas\":[");
    assert_non_null(qds);
    assert_non_null(strchr(qds, ']'));
    size_t n = (size_t)(strchr(qds, ']') - qds) + 1;
    assert_int_equal(n, strlen(want));
    assert_memory_equal(qds, want, n);
    ns_free(want);
    ns_free(got);
}

/* A registration of broker b carrying the topics where topics[t] != 0, each
 * with that many queues, and one of its own. */
static void broker_register(struct ns_register *r, int b, const int32_t *topics,
                            int64_t counter)
{
    char name[32], addr[32];
    broker_name(name, sizeof name, b);
    broker_addr(addr, sizeof addr, b);
    reg_init(r, "c1", name, 0, addr, NULL, 0, counter);
    /* A topic of its own: a registration of one topic is refused from a
     * broker not registered yet (docs/protocol.md §5.2). */
    char own[32];
    snprintf(own, sizeof own, "own-%d", b);
    reg_topic(r, own, 1, 1, 6, 0);
    for (int t = 0; t < N_TOPICS; t++) {
        if (topics[t] != 0) {
            char tn[32];
            topic_name(tn, sizeof tn, t);
            reg_topic(r, tn, topics[t], topics[t], 6, 0);
        }
    }
}

/* Brokers register and unregister at random; after each step every topic
 * lists exactly the queue data of a model kept beside it, and the state
 * survives its own encoding. */
static void test_brokers_join_and_leave_in_any_order(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        rng_state = seed;
        struct ns_route *route = ns_route_create();
        assert_non_null(route);
        int32_t model[N_TOPICS][N_BROKERS] = {{0}};
        int64_t counter[N_BROKERS] = {0};
        for (int step = 0; step < 300; step++) {
            int b = (int)(rng() % N_BROKERS);
            if (rng() % 3 == 0) {
                char name[32], addr[32];
                broker_name(name, sizeof name, b);
                broker_addr(addr, sizeof addr, b);
                unregister_one(route, "c1", addr, name, 0);
                for (int t = 0; t < N_TOPICS; t++) {
                    model[t][b] = 0;
                }
            } else {
                int32_t topics[N_TOPICS] = {0};
                for (int t = 0; t < N_TOPICS; t++) {
                    topics[t] = rng() % 2 ? 1 + (int32_t)(rng() % 9) : 0;
                    if (topics[t] != 0) {
                        model[t][b] = topics[t];
                    }
                }
                struct ns_register r;
                broker_register(&r, b, topics, ++counter[b]);
                do_register(route, &r, false, NULL, NULL);
                ns_register_close(&r);
            }
            for (int t = 0; t < N_TOPICS; t++) {
                assert_topic(route, t, model[t]);
            }
        }
        struct ns_buf before, after;
        state_of(route, &before);
        struct ns_route *copy = ns_route_create();
        assert_non_null(copy);
        struct ns_rd rd;
        ns_rd_init(&rd, before.data, before.len);
        assert_int_equal(ns_route_decode_state(copy, &rd), 0);
        state_of(copy, &after);
        assert_true(same_state(&before, &after));
        ns_buf_close(&before);
        ns_buf_close(&after);
        ns_route_destroy(copy);
        ns_route_destroy(route);
    }
}

/* The slot of the first queue data serves the next broker once its broker
 * left, while another broker's queue data stays in the list. */
static void test_slot_reused_beside_a_second_broker(void **state)
{
    (void)state;
    struct ns_route *route = ns_route_create();
    assert_non_null(route);
    int32_t only_t0[N_TOPICS] = {3};
    int32_t want[N_BROKERS] = {0};
    struct ns_register r;
    for (int b = 0; b < 3; b++) {
        only_t0[0] = 3 + b;
        broker_register(&r, b, only_t0, 1);
        do_register(route, &r, false, NULL, NULL);
        ns_register_close(&r);
        want[b] = 3 + b;
        assert_topic(route, 0, want);
        if (b == 1) {
            /* broker-0 held the slot: broker-2 takes it back */
            unregister_one(route, "c1", "10.0.0.1:10911", "broker-0", 0);
            want[0] = 0;
            assert_topic(route, 0, want);
        }
    }
    unregister_one(route, "c1", "10.0.0.2:10911", "broker-1", 0);
    unregister_one(route, "c1", "10.0.0.3:10911", "broker-2", 0);
    want[1] = want[2] = 0;
    assert_topic(route, 0, want);
    ns_route_destroy(route);
}

/* Out of memory at each allocation of the registration that gives the topics
 * their second broker: the first broker's queue data stay whole, and the
 * same registration again gives both. */
static void test_out_of_memory_at_the_second_broker(void **state)
{
    (void)state;
    int32_t topics[N_TOPICS] = {4, 4, 4};
    int32_t other[N_TOPICS] = {7, 7, 7};
    bool succeeded = false;
    for (long k = 0; !succeeded; k++) {
        struct ns_route *route = ns_route_create();
        assert_non_null(route);
        struct ns_register r;
        broker_register(&r, 0, topics, 1);
        do_register(route, &r, false, NULL, NULL);
        ns_register_close(&r);
        broker_register(&r, 1, other, 1);
        struct ns_register_result res;
        ns_alloc_fail_at(k, 0);
        int rv = ns_route_register_broker(route, &r, false, &res);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        succeeded = rv == 0;
        if (rv == 0) {
            ns_register_result_close(&res);
        }
        for (int t = 0; t < 3; t++) {
            char name[32];
            topic_name(name, sizeof name, t);
            char *got = route_json(route, name, NS_JSON_STANDARD);
            assert_non_null(got);
            assert_non_null(strstr(got,
                                   "{\"brokerName\":\"broker-0\",\"perm\":6,"
                                   "\"readQueueNums\":4,"));
            ns_free(got);
        }
        do_register(route, &r, false, NULL, NULL);
        ns_register_close(&r);
        int32_t both[N_BROKERS] = {4, 7};
        for (int t = 0; t < 3; t++) {
            assert_topic(route, t, both);
        }
        ns_route_destroy(route);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_brokers_join_and_leave_in_any_order),
        cmocka_unit_test(test_slot_reused_beside_a_second_broker),
        cmocka_unit_test(test_out_of_memory_at_the_second_broker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
