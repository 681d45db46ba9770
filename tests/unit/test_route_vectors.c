/* The Java 4.9.8 recorded scenario (vectors/java-4.9.8, steps 03-27) replayed
 * as route-level expectations: the reply bodies of summary.txt with the 5.x
 * enableActingMaster property added and map/set entries in our sorted order
 * instead of Java's hash order. */
#include <stdio.h>
#include <stdlib.h>

#include "test_route_util.h"

#define EAM ",\"enableActingMaster\":false"

/* Reads NS_VECTORS_DIR/<name>.body; caller frees. */
static char *read_vector(const char *name)
{
    char path[512];
    FILE *f;
    long n;
    char *s;

    snprintf(path, sizeof(path), "%s/%s.body", NS_VECTORS_DIR, name);
    f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* The 4.9.8 body with the 5.x BrokerData property inserted after every
 * "cluster" value. */
static char *vector_5x(const char *name)
{
    static const char needle[] = "\"cluster\":\"DefaultCluster\"";
    char *v = read_vector(name);
    char *out = malloc(strlen(v) * 2 + 1);
    char *o = out;
    const char *p = v;
    const char *hit;

    assert_non_null(out);
    while ((hit = strstr(p, needle)) != NULL) {
        size_t n = (size_t)(hit - p) + strlen(needle);
        memcpy(o, p, n);
        o += n;
        memcpy(o, EAM, strlen(EAM));
        o += strlen(EAM);
        p += n;
    }
    strcpy(o, p);
    free(v);
    return out;
}

static void expect_vector(const struct ns_route *route, const char *name,
                          const char *topic, enum ns_json_flavour flavour)
{
    char *want = vector_5x(name);
    char *got = route_json(route, topic, flavour);

    assert_non_null(got);
    assert_string_equal(got, want);
    ns_free(got);
    free(want);
}

static void expect_cluster_vector(const struct ns_route *route,
                                  const char *name)
{
    char *want = vector_5x(name);

    assert_cluster_info(route, want);
    free(want);
}

/* Same multiset of bytes and same length as the (reordered) recording. */
static void expect_permutation_of(const char *got, const char *name)
{
    char *want = vector_5x(name);
    size_t counts[256] = {0};

    assert_int_equal(strlen(got), strlen(want));
    for (const char *p = got; *p; p++) {
        counts[(unsigned char)*p]++;
    }
    for (const char *p = want; *p; p++) {
        assert_true(counts[(unsigned char)*p] > 0);
        counts[(unsigned char)*p]--;
    }
    free(want);
}

static void reg_broker(struct ns_register *r, const char *name, int64_t id,
                       const char *addr, const char *ha, int64_t counter,
                       bool other_topic)
{
    reg_init(r, "DefaultCluster", name, id, addr, ha, -1, counter);
    reg_topic(r, "TestTopic", 4, 4, 6, 0);
    if (other_topic) {
        reg_topic(r, "OtherTopic", 4, 4, 6, 0);
    }
}

static void test_scenario(void **state)
{
    struct ns_route *route = ns_route_create();
    struct ns_register r;
    char master[64];
    char ha[64];
    char *s;
    (void)state;

    assert_non_null(route);
    /* 01, 02 */
    expect_cluster_vector(route, "01_cluster_info_empty");
    assert_route(route, "TestTopic", NS_JSON_STANDARD, NULL);

    /* 03: an old broker's first registration with a single topic is accepted.
     */
    reg_broker(&r, "broker-a", 0, "127.0.0.1:10911", "127.0.0.1:10912", 1,
               false);
    assert_int_equal(do_register(route, &r, false, master, ha), NS_REGISTER_OK);
    assert_string_equal(master, "(null)");
    ns_register_close(&r);

    /* 05-09, 12, 14, 15 */
    expect_cluster_vector(route, "05_cluster_info_after_register");
    expect_vector(route, "06_route_TestTopic", "TestTopic", NS_JSON_STANDARD);
    expect_vector(route, "07_route_TestTopic_rocketmq_hdr", "TestTopic",
                  NS_JSON_STANDARD);
    s = read_vector("08_all_topic_list");
    assert_body(route, ns_route_encode_all_topics, s);
    free(s);
    {
        struct ns_buf b;
        char *got;
        ns_buf_init(&b);
        assert_int_equal(
            ns_route_encode_topics_by_cluster(route, "DefaultCluster", &b), 0);
        got = buf_string(&b);
        s = read_vector("09_topics_by_cluster");
        assert_string_equal(got, s);
        free(s);
        ns_free(got);
    }
    expect_vector(route, "12_route_TestTopic_with_order_conf", "TestTopic",
                  NS_JSON_STANDARD);
    expect_vector(route, "14_route_TestTopic_v4_9_3_client", "TestTopic",
                  NS_JSON_LEGACY);
    expect_vector(route, "15_route_TestTopic_v4_9_3_acceptStandardJsonOnly",
                  "TestTopic", NS_JSON_STANDARD);

    /* 16: broker-b's old slave first: no master yet, no routes from it. */
    reg_broker(&r, "broker-b", 1, "127.0.0.1:20911", "127.0.0.1:20912", 7,
               true);
    assert_int_equal(do_register(route, &r, false, master, ha), NS_REGISTER_OK);
    assert_string_equal(master, "(null)");
    ns_register_close(&r);
    assert_route(route, "OtherTopic", NS_JSON_STANDARD, NULL);

    /* 17: its master. */
    reg_broker(&r, "broker-b", 0, "127.0.0.1:30911", "127.0.0.1:30912", 7,
               true);
    assert_int_equal(do_register(route, &r, false, master, ha), NS_REGISTER_OK);
    assert_string_equal(master, "(null)");
    ns_register_close(&r);

    /* 18 */
    {
        static const char want[] =
            "{\"brokerAddrTable\":{\"broker-a\":{\"brokerAddrs\":{0:\"127.0.0."
            "1:10911\"},"
            "\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\"" EAM
            "},\"broker-b\":{"
            "\"brokerAddrs\":{0:\"127.0.0.1:30911\",1:\"127.0.0.1:20911\"},"
            "\"brokerName\":"
            "\"broker-b\",\"cluster\":\"DefaultCluster\"" EAM
            "}},\"clusterAddrTable\":{"
            "\"DefaultCluster\":[\"broker-a\",\"broker-b\"]}}";
        assert_cluster_info(route, want);
        expect_permutation_of(want, "18_cluster_info_two_brokers");
    }
    /* 19, 20 */
    {
        static const char want19[] =
            "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\"},"
            "\"brokerName\":"
            "\"broker-a\",\"cluster\":\"DefaultCluster\"" EAM
            "},{\"brokerAddrs\":{\"0\":\"127."
            "0.0.1:30911\",\"1\":\"127.0.0.1:20911\"},\"brokerName\":\"broker-"
            "b\",\"cluster\":"
            "\"DefaultCluster\"" EAM
            "}],\"filterServerTable\":{},\"queueDatas\":[{"
            "\"brokerName\":\"broker-a\",\"perm\":6,\"readQueueNums\":4,"
            "\"topicSysFlag\":0,"
            "\"writeQueueNums\":4},{\"brokerName\":\"broker-b\",\"perm\":6,"
            "\"readQueueNums\":4,"
            "\"topicSysFlag\":0,\"writeQueueNums\":4}]}";
        static const char want20[] =
            "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},"
            "\"brokerName\":"
            "\"broker-a\",\"cluster\":\"DefaultCluster\"" EAM
            "},{\"brokerAddrs\":{0:\"127."
            "0.0.1:30911\",1:\"127.0.0.1:20911\"},\"brokerName\":\"broker-b\","
            "\"cluster\":"
            "\"DefaultCluster\"" EAM
            "}],\"filterServerTable\":{},\"queueDatas\":[{"
            "\"brokerName\":\"broker-a\",\"perm\":6,\"readQueueNums\":4,"
            "\"topicSysFlag\":0,"
            "\"writeQueueNums\":4},{\"brokerName\":\"broker-b\",\"perm\":6,"
            "\"readQueueNums\":4,"
            "\"topicSysFlag\":0,\"writeQueueNums\":4}]}";
        assert_route(route, "TestTopic", NS_JSON_STANDARD, want19);
        expect_permutation_of(want19, "19_route_TestTopic_two_brokers");
        assert_route(route, "TestTopic", NS_JSON_LEGACY, want20);
        expect_permutation_of(want20, "20_route_TestTopic_two_brokers_v4_9_3");
    }

    /* 21, 22, 25 */
    unregister_one(route, "DefaultCluster", "127.0.0.1:30911", "broker-b", 0);
    unregister_one(route, "DefaultCluster", "127.0.0.1:20911", "broker-b", 1);
    assert_route(route, "OtherTopic", NS_JSON_STANDARD, NULL);
    unregister_one(route, "DefaultCluster", "127.0.0.1:10911", "broker-a", 0);
    /* 26, 27 */
    expect_cluster_vector(route, "26_cluster_info_after_unregister");
    assert_route(route, "TestTopic", NS_JSON_STANDARD, NULL);
    assert_int_equal(ns_route_n_brokers(route), 0);
    assert_int_equal(ns_route_n_topics(route), 0);
    ns_route_destroy(route);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scenario),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
