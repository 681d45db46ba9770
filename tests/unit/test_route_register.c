/* REGISTER_BROKER table updates (docs/protocol.md §5.2) through the pure route
 * API: acceptance cases 14, 16-19, 21-29 and 35 of §8 as route-level
 * expectations.
 */
#include "test_route_util.h"

#define BD_A0_STD                                                              \
    "{\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\"},\"brokerName\":\"broker-"    \
    "a\",\"cluster\":"                                                         \
    "\"c1\",\"enableActingMaster\":false}"

static int setup(void **state)
{
    *state = ns_route_create();
    return *state == NULL;
}

static int teardown(void **state)
{
    ns_route_destroy(*state);
    return 0;
}

/* 14 */
static void test_register_master(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;
    char master[64];
    char ha[64];

    reg_a0(&r, 0);
    assert_int_equal(do_register(route, &r, false, master, ha), NS_REGISTER_OK);
    assert_string_equal(master, "(null)");
    assert_string_equal(ha, "(null)");
    ns_register_close(&r);
    assert_route(route, "TopicA", NS_JSON_STANDARD,
                 "{\"brokerDatas\":[" BD_A0_STD
                 "],\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
    assert_int_equal(ns_route_n_topics(route), 2);
    assert_int_equal(ns_route_n_brokers(route), 1);
    assert_int_equal(ns_route_broker_timeout(route, "c1", "127.0.0.1:10911"),
                     NS_DEFAULT_HEARTBEAT_TIMEOUT_MS);
    assert_int_equal(ns_route_broker_timeout(route, "c2", "127.0.0.1:10911"),
                     -1);
}

/* 16 */
static void test_register_slave_gets_master(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;
    char master[64];
    char ha[64];

    register_with(route, reg_a0, 0);
    reg_a1(&r, 0);
    assert_int_equal(do_register(route, &r, false, master, ha), NS_REGISTER_OK);
    ns_register_close(&r);
    assert_string_equal(master, "127.0.0.1:10911");
    assert_string_equal(ha, "127.0.0.1:10912");
    assert_route(route, "TopicA", NS_JSON_STANDARD,
                 "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:"
                 "10911\",\"1\":\"127.0.0."
                 "1:10921\"},\"brokerName\":\"broker-a\",\"cluster\":\"c1\","
                 "\"enableActingMaster\":false}],\"filterServerTable\":{},"
                 "\"queueDatas\":[" QD_A(6) "]}");
}

/* 17 */
static void test_old_slave_alone(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    reg_init(&r, "DefaultCluster", "broker-x", 2333, "10.10.1.1", NULL, -1, 1);
    reg_topic(&r, "T1", 8, 8, 6, 0);
    reg_topic(&r, "T2", 8, 8, 6, 0);
    assert_int_equal(do_register(route, &r, false, NULL, NULL), NS_REGISTER_OK);
    ns_register_close(&r);
    assert_cluster_info(
        route, "{\"brokerAddrTable\":{\"broker-x\":{\"brokerAddrs\":{2333:"
               "\"10.10.1.1\"},\"brokerName\":\"broker-x\",\"cluster\":"
               "\"DefaultCluster\",\"enableActingMaster\":false}},"
               "\"clusterAddrTable\":{\"DefaultCluster\":[\"broker-x\"]}}");
    assert_route(route, "T1", NS_JSON_STANDARD, NULL);
    assert_route(route, "T2", NS_JSON_LEGACY, NULL);
    assert_int_equal(ns_route_n_topics(route), 0);
}

/* 18 */
static void test_only_slave_acting_master(void **state)
{
    struct ns_route *route = *state;

    assert_int_equal(register_with(route, reg_a1, 1), NS_REGISTER_OK);
    assert_route(
        route, "TopicA", NS_JSON_STANDARD,
        "{\"brokerDatas\":[{\"brokerAddrs\":{\"1\":\"127.0.0.1:10921\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":true}],"
        "\"filterServerTable\":{},\"queueDatas\":[" QD_A(4) "]}");
    assert_int_equal(register_with(route, reg_a0, 1), NS_REGISTER_OK);
    assert_route(route, "TopicB", NS_JSON_LEGACY,
                 "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\",1:"
                 "\"127.0.0.1:10921\"},"
                 "\"brokerName\":\"broker-a\",\"cluster\":\"c1\","
                 "\"enableActingMaster\":true}],"
                 "\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
}

/* 18, the slave without acting master: a slave never writes routes. */
static void test_only_slave_without_acting_master(void **state)
{
    struct ns_route *route = *state;

    assert_int_equal(register_with(route, reg_a1, 0), NS_REGISTER_OK);
    assert_route(
        route, "TopicA", NS_JSON_STANDARD,
        "{\"brokerDatas\":[{\"brokerAddrs\":{\"1\":\"127.0.0.1:10921\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
}

/* 19 */
static void test_single_topic_guard(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10911", NULL, 0, 1);
    reg_topic(&r, "TopicA", 4, 4, 6, 0);
    assert_int_equal(do_register(route, &r, false, NULL, NULL),
                     NS_REGISTER_FAILED);
    assert_route(route, "TopicA", NS_JSON_STANDARD, NULL);
    /* Steps 1-5 stay applied: the group shows with an empty address map. */
    assert_cluster_info(
        route, "{\"brokerAddrTable\":{\"broker-a\":{\"brokerAddrs\":{},"
               "\"brokerName\":\"broker-a\",\"cluster\":\"c1\","
               "\"enableActingMaster\":false}},\"clusterAddrTable\":{\"c1\":["
               "\"broker-a\"]}}");
    assert_int_equal(ns_route_n_brokers(route), 0);

    /* Two topics succeed; afterwards a single-topic increment is fine too. */
    reg_topic(&r, "TopicB", 4, 4, 6, 0);
    assert_int_equal(do_register(route, &r, false, NULL, NULL), NS_REGISTER_OK);
    ns_register_close(&r);
    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10911", NULL, 0, 2);
    reg_topic(&r, "TopicC", 4, 4, 6, 0);
    assert_int_equal(do_register(route, &r, false, NULL, NULL), NS_REGISTER_OK);
    ns_register_close(&r);
    assert_routable(route, "TopicC");
}

static void test_single_topic_zero_topics_ok(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10911", NULL, 0, 1);
    assert_int_equal(do_register(route, &r, false, NULL, NULL), NS_REGISTER_OK);
    ns_register_close(&r);
    assert_int_equal(ns_route_n_brokers(route), 1);
}

/* Compatibility point (a): an old broker's first registration with one topic is
 * accepted. */
static void test_single_topic_old_broker_accepted(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    reg_init(&r, "DefaultCluster", "broker-a", 0, "127.0.0.1:10911",
             "127.0.0.1:10912", -1, 1);
    reg_topic(&r, "TestTopic", 4, 4, 6, 0);
    assert_int_equal(do_register(route, &r, false, NULL, NULL), NS_REGISTER_OK);
    ns_register_close(&r);
    assert_routable(route, "TestTopic");
}

/* 21: orderTopicConf only when given. */
static void test_order_topic_conf(void **state)
{
    struct ns_route *route = *state;
    struct ns_route_query q = {.topic = "TopicA",
                               .flavour = NS_JSON_LEGACY,
                               .order_topic_conf = "broker-a:4"};
    char *s;

    register_with(route, reg_a0, 0);
    s = route_json_q(route, &q);
    assert_string_equal(
        s, "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},"
           "\"brokerName\":"
           "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":false}],"
           "\"filterServerTable\":{},\"orderTopicConf\":\"broker-a:4\","
           "\"queueDatas\":[" QD_A(6) "]}");
    ns_free(s);
}

/* 22 */
static void test_json_flavours(void **state)
{
    struct ns_route *route = *state;
    char *std;
    char *leg;

    register_with(route, reg_a0, 0);
    std = route_json(route, "TopicA", NS_JSON_STANDARD);
    leg = route_json(route, "TopicA", NS_JSON_LEGACY);
    assert_non_null(strstr(std, "\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\"}"));
    assert_non_null(strstr(leg, "\"brokerAddrs\":{0:\"127.0.0.1:10911\"}"));
    ns_free(std);
    ns_free(leg);
    assert_cluster_info(
        route, "{\"brokerAddrTable\":{\"broker-a\":{\"brokerAddrs\":{0:\"127.0."
               "0.1:10911\"},\"brokerName\":\"broker-a\",\"cluster\":\"c1\","
               "\"enableActingMaster\":false}},\"clusterAddrTable\":{\"c1\":["
               "\"broker-a\"]}}");
}

/* 23 */
static void test_two_groups(void **state)
{
    struct ns_route *route = *state;

    register_with(route, reg_b0, 0);
    register_with(route, reg_a0, 0);
    assert_route(route, "TopicA", NS_JSON_STANDARD,
                 "{\"brokerDatas\":[" BD_A0_STD
                 ",{\"brokerAddrs\":{\"0\":\"127.0.0.1:20911\"},\"brokerName\":"
                 "\"broker-b\","
                 "\"cluster\":\"c1\",\"enableActingMaster\":false}],"
                 "\"filterServerTable\":{},"
                 "\"queueDatas\":[" QD_A(6) "," QD_B(6) "]}");
    assert_cluster_info(route, "{\"brokerAddrTable\":{\"broker-a\":{"
                               "\"brokerAddrs\":{0:\"127.0.0.1:10911\"},"
                               "\"brokerName\":\"broker-a\",\"cluster\":\"c1\","
                               "\"enableActingMaster\":false},"
                               "\"broker-b\":{\"brokerAddrs\":{0:\"127.0.0.1:"
                               "20911\"},\"brokerName\":\"broker-b\","
                               "\"cluster\":\"c1\",\"enableActingMaster\":"
                               "false}},\"clusterAddrTable\":{\"c1\":["
                               "\"broker-a\",\"broker-b\"]}}");
}

/* 24 */
static void test_keep_topics_same_version(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    register_with(route, reg_a0, 0);
    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10911", "127.0.0.1:10912", 0,
             1);
    reg_topic(&r, "TopicB", 4, 4, 6, 0);
    assert_int_equal(do_register(route, &r, false, NULL, NULL), NS_REGISTER_OK);
    assert_routable(route, "TopicA");
    assert_int_equal(do_register(route, &r, true, NULL, NULL), NS_REGISTER_OK);
    ns_register_close(&r);
    assert_route(route, "TopicA", NS_JSON_STANDARD, NULL);
    assert_int_equal(ns_route_n_topics(route), 1);
}

/* 24: with mappings in the request, nothing is deleted (static topics
 * unsupported). */
static void test_delete_missing_skipped_with_mappings(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    register_with(route, reg_a0, 0);
    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10911", "127.0.0.1:10912", 0,
             2);
    reg_topic(&r, "TopicB", 4, 4, 6, 0);
    r.mappings = ns_calloc(1, sizeof(*r.mappings));
    r.n_mappings = 1;
    r.mappings[0].topic = ns_strdup("TopicB");
    r.mappings[0].bname = ns_strdup("broker-a");
    r.mappings[0].scope = ns_strdup("__global__");
    r.mappings[0].epoch = T0;
    r.mappings[0].total_queues = 2;
    r.mappings[0].curr_ids = ns_calloc(2, sizeof(struct ns_id_pair));
    r.mappings[0].n_curr_ids = 2;
    r.mappings[0].curr_ids[0] = (struct ns_id_pair){1, 1};
    r.mappings[0].curr_ids[1] = (struct ns_id_pair){0, 0};
    assert_int_equal(do_register(route, &r, true, NULL, NULL), NS_REGISTER_OK);
    ns_register_close(&r);
    assert_int_equal(ns_route_n_topics(route), 2);
    assert_route(
        route, "TopicB", NS_JSON_LEGACY,
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[" QD_A(
            6) "],\"topicQueueMappingByBroker\":{\"broker-a\":{\"bname\":"
               "\"broker-a\","
               "\"currIdMap\":{0:0,1:1},\"dirty\":false,\"epoch\":"
               "1700000000000,"
               "\"scope\":\"__global__\",\"topic\":\"TopicB\",\"totalQueues\":"
               "2}}}");
}

/* 25 */
static void test_new_topic_same_version(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    register_with(route, reg_a0, 0);
    reg_a0(&r, 0);
    reg_topic(&r, "TopicC", 4, 4, 6, 0);
    assert_int_equal(do_register(route, &r, false, NULL, NULL), NS_REGISTER_OK);
    ns_register_close(&r);
    assert_route(route, "TopicC", NS_JSON_STANDARD,
                 "{\"brokerDatas\":[" BD_A0_STD
                 "],\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
}

/* Same DataVersion: a changed config of a known topic is not applied (Java
 * behaviour); a new DataVersion applies it. */
static void test_changed_config_needs_new_version(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    register_with(route, reg_a0, 0);
    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10911", "127.0.0.1:10912", 0,
             1);
    reg_topic(&r, "TopicA", 8, 8, 6, 0);
    reg_topic(&r, "TopicB", 4, 4, 6, 0);
    do_register(route, &r, false, NULL, NULL);
    assert_route(route, "TopicA", NS_JSON_STANDARD,
                 "{\"brokerDatas\":[" BD_A0_STD
                 "],\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
    r.dv.counter = 2;
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    assert_route(route, "TopicA", NS_JSON_STANDARD,
                 "{\"brokerDatas\":[" BD_A0_STD
                 "],\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":"
                 "\"broker-a\","
                 "\"perm\":6,\"readQueueNums\":8,\"topicSysFlag\":0,"
                 "\"writeQueueNums\":8}]}");
}

/* 26 */
static void test_role_switch(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    register_with(route, reg_a0, 0);
    register_with(route, reg_a1, 0);
    unregister_one(route, "c1", "127.0.0.1:10911", "broker-a", 0);
    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10921", "127.0.0.1:10922", 0,
             5);
    reg_topic(&r, "TopicA", 4, 4, 6, 0);
    reg_topic(&r, "TopicB", 4, 4, 6, 0);
    assert_int_equal(do_register(route, &r, false, NULL, NULL), NS_REGISTER_OK);
    ns_register_close(&r);
    assert_route(
        route, "TopicA", NS_JSON_STANDARD,
        "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:10921\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
    reg_init(&r, "c1", "broker-a", 1, "127.0.0.1:10911", "127.0.0.1:10912", 0,
             6);
    reg_topic(&r, "TopicA", 4, 4, 6, 0);
    reg_topic(&r, "TopicB", 4, 4, 6, 0);
    assert_int_equal(do_register(route, &r, false, NULL, NULL), NS_REGISTER_OK);
    ns_register_close(&r);
    assert_route(route, "TopicA", NS_JSON_STANDARD,
                 "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:"
                 "10921\",\"1\":\"127.0.0."
                 "1:10911\"},\"brokerName\":\"broker-a\",\"cluster\":\"c1\","
                 "\"enableActingMaster\":false}],\"filterServerTable\":{},"
                 "\"queueDatas\":[" QD_A(6) "]}");
}

/* Step 5: an address that moves from id 0 to id 1 without unregistering appears
 * once. */
static void test_address_dedup(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    register_with(route, reg_a0, 0);
    reg_init(&r, "c1", "broker-a", 1, "127.0.0.1:10911", NULL, 0, 2);
    reg_topic(&r, "TopicA", 4, 4, 6, 0);
    reg_topic(&r, "TopicB", 4, 4, 6, 0);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    assert_cluster_info(
        route, "{\"brokerAddrTable\":{\"broker-a\":{\"brokerAddrs\":{1:\"127.0."
               "0.1:10911\"},\"brokerName\":\"broker-a\",\"cluster\":\"c1\","
               "\"enableActingMaster\":false}},\"clusterAddrTable\":{\"c1\":["
               "\"broker-a\"]}}");
}

/* 27 */
static void test_master_address_change(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    register_with(route, reg_a0, 0);
    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10931", NULL, 0, 1);
    reg_topic(&r, "TopicA", 4, 4, 6, 0);
    reg_topic(&r, "TopicB", 4, 4, 6, 0);
    assert_int_equal(do_register(route, &r, false, NULL, NULL), NS_REGISTER_OK);
    ns_register_close(&r);
    assert_route(
        route, "TopicA", NS_JSON_STANDARD,
        "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:10931\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
}

/* 28 */
static void test_state_version_conflict(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;
    char master[64];

    reg_a0(&r, 0);
    r.dv.state_version = 5;
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10931", NULL, 0, 9);
    r.dv.state_version = 3;
    reg_topic(&r, "TopicA", 4, 4, 6, 0);
    reg_topic(&r, "TopicB", 4, 4, 6, 0);
    assert_int_equal(do_register(route, &r, false, master, NULL),
                     NS_REGISTER_CONFLICT);
    assert_string_equal(master, "(null)");
    ns_register_close(&r);
    assert_route(route, "TopicA", NS_JSON_STANDARD,
                 "{\"brokerDatas\":[" BD_A0_STD
                 "],\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
    assert_null(ns_route_find_data_version(route, "c1", "127.0.0.1:10931"));
}

/* 29 (route part): the stored DataVersion. */
static void test_data_version(void **state)
{
    struct ns_route *route = *state;
    const struct ns_data_version *dv;
    struct ns_data_version other = {1, 0, T0};

    assert_null(ns_route_find_data_version(route, "c1", "127.0.0.1:10911"));
    register_with(route, reg_a0, 0);
    dv = ns_route_find_data_version(route, "c1", "127.0.0.1:10911");
    assert_non_null(dv);
    assert_true(ns_data_version_equal(dv, &other));
    other.counter = 2;
    assert_false(ns_data_version_equal(dv, &other));
    other.counter = 1;
    other.state_version = 1;
    assert_false(ns_data_version_equal(dv, &other));
    assert_null(ns_route_find_data_version(route, "c2", "127.0.0.1:10911"));
}

/* 35 (route part): the per-broker timeout, and foreach in sorted order. */
static void collect(void *arg, const char *cluster, const char *addr,
                    int64_t timeout)
{
    char *out = arg;
    char line[128];

    snprintf(line, sizeof(line), "%s/%s/%lld;", cluster, addr,
             (long long)timeout);
    strcat(out, line);
}

static void test_timeout_and_foreach(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;
    char out[512] = "";

    reg_b0(&r, 0);
    r.heartbeat_timeout_ms = 3000;
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    register_with(route, reg_a1, 0);
    register_with(route, reg_a0, 0);
    assert_int_equal(ns_route_broker_timeout(route, "c1", "127.0.0.1:20911"),
                     3000);
    ns_route_foreach_broker(route, collect, out);
    assert_string_equal(out,
                        "c1/127.0.0.1:10911/120000;c1/127.0.0.1:10921/120000;"
                        "c1/127.0.0.1:20911/3000;");
}

/* Zone and acting flags of the group follow the latest registration (step 3).
 */
static void test_group_flags(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    reg_a0(&r, 1);
    reg_zone(&r, "zone-1");
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    assert_route(
        route, "TopicA", NS_JSON_STANDARD,
        "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":true,"
        "\"zoneName\":"
        "\"zone-1\"}],\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
    register_with(route, reg_a0, -1);
    assert_route(route, "TopicA", NS_JSON_STANDARD,
                 "{\"brokerDatas\":[" BD_A0_STD
                 "],\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
}

/* Step 2: an existing group keeps its cluster; step 1 still lists the name. */
static void test_group_keeps_cluster(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    register_with(route, reg_a0, 0);
    reg_init(&r, "c2", "broker-a", 1, "127.0.0.1:10921", NULL, 0, 1);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    assert_cluster_info(
        route,
        "{\"brokerAddrTable\":{\"broker-a\":{\"brokerAddrs\":{0:\"127.0."
        "0.1:10911\",1:\"127.0.0.1:10921\"},\"brokerName\":\"broker-a\","
        "\"cluster\":\"c1\",\"enableActingMaster\":false}},"
        "\"clusterAddrTable\":{\"c1\":[\"broker-a\"],\"c2\":[\"broker-a\"]}}");
}

/* Step 12: filter servers. */
static void test_filter_servers(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    reg_a0(&r, 0);
    r.has_filter_servers = true;
    r.filter_servers = ns_calloc(1, sizeof(char *));
    r.filter_servers[0] = ns_strdup("127.0.0.1:9999");
    r.n_filter_servers = 1;
    do_register(route, &r, false, NULL, NULL);
    assert_route(
        route, "TopicA", NS_JSON_STANDARD,
        "{\"brokerDatas\":[" BD_A0_STD
        "],\"filterServerTable\":{\"127.0.0.1:10911\":[\"127.0.0.1:9999\"]},"
        "\"queueDatas\":[" QD_A(6) "]}");
    ns_free(r.filter_servers[0]);
    r.n_filter_servers = 0;
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    assert_route(route, "TopicA", NS_JSON_STANDARD,
                 "{\"brokerDatas\":[" BD_A0_STD
                 "],\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
}

/* Allocation-failure sweep over a registration: succeed or fail cleanly. */
static void test_register_alloc_sweep(void **state)
{
    (void)state;
    for (long k = 0;; k++) {
        struct ns_route *route = ns_route_create();
        struct ns_register r;
        struct ns_register_result res;
        int rv;
        if (route == NULL) {
            continue;
        }
        register_with(route, reg_b0, 0);
        reg_a1(&r, 1);
        ns_alloc_fail_at(k, 1);
        rv = ns_route_register_broker(route, &r, true, &res);
        ns_alloc_fail_at(-1, 0);
        ns_register_close(&r);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        if (rv == 0) {
            ns_register_result_close(&res);
            ns_route_destroy(route);
            break;
        }
        ns_route_destroy(route);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register_master, setup, teardown),
        cmocka_unit_test_setup_teardown(test_register_slave_gets_master, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_old_slave_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_slave_acting_master, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_only_slave_without_acting_master,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_topic_guard, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_single_topic_zero_topics_ok, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_single_topic_old_broker_accepted,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_order_topic_conf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_flavours, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keep_topics_same_version, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_delete_missing_skipped_with_mappings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_topic_same_version, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_changed_config_needs_new_version,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_role_switch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_address_dedup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_master_address_change, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_state_version_conflict, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_data_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_and_foreach, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_group_flags, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_keeps_cluster, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_filter_servers, setup, teardown),
        cmocka_unit_test(test_register_alloc_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
