/* Removal, expiry and administrative operations of the route (docs/protocol.md
 * §5.3, 5.5-5.8): acceptance cases 30-43 and 47 of §8 as route-level
 * expectations. */
#include "test_route_util.h"

#define EMPTY_CLUSTER_INFO "{\"brokerAddrTable\":{},\"clusterAddrTable\":{}}"

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

/* 30 */
static void test_unregister_only_member(void **state)
{
    struct ns_route *route = *state;

    register_with(route, reg_a0, 0);
    unregister_one(route, "c1", "127.0.0.1:10911", "broker-a", 0);
    assert_route(route, "TopicA", NS_JSON_STANDARD, NULL);
    assert_route(route, "TopicB", NS_JSON_STANDARD, NULL);
    assert_cluster_info(route, EMPTY_CLUSTER_INFO);
    assert_int_equal(ns_route_n_topics(route), 0);
    assert_int_equal(ns_route_n_brokers(route), 0);
}

/* 31 */
static void test_unregister_slave(void **state)
{
    struct ns_route *route = *state;

    register_with(route, reg_a0, 0);
    register_with(route, reg_a1, 0);
    unregister_one(route, "c1", "127.0.0.1:10921", "broker-a", 1);
    assert_route(
        route, "TopicA", NS_JSON_LEGACY,
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
}

/* 32 */
static void test_acting_master(void **state)
{
    struct ns_route *route = *state;
    struct ns_route_query q = {.topic = "TopicA",
                               .flavour = NS_JSON_STANDARD,
                               .support_acting_master = true};
    char *s;

    register_with(route, reg_a0, 1);
    register_with(route, reg_a1, 1);
    unregister_one(route, "c1", "127.0.0.1:10911", "broker-a", 0);
    s = route_json_q(route, &q);
    assert_string_equal(
        s, "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:10921\"},"
           "\"brokerName\":\"broker-a\",\"cluster\":\"c1\","
           "\"enableActingMaster\":true}],\"filterServerTable\":{},"
           "\"queueDatas\":[" QD_A(4) "]}");
    ns_free(s);
    /* Without supportActingMaster the slave stays under its own id. */
    assert_route(
        route, "TopicA", NS_JSON_STANDARD,
        "{\"brokerDatas\":[{\"brokerAddrs\":{\"1\":\"127.0.0.1:10921\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":true}],"
        "\"filterServerTable\":{},\"queueDatas\":[" QD_A(4) "]}");
    /* The rewrite is never applied to member-group sync topics. */
    q.topic = "rmq_sys_SYNC_BROKER_MEMBER_broker-a";
    assert_null(route_json_q(route, &q));
}

static void test_acting_master_off(void **state)
{
    struct ns_route *route = *state;
    struct ns_route_query q = {.topic = "TopicA",
                               .flavour = NS_JSON_STANDARD,
                               .support_acting_master = true};
    char *s;

    register_with(route, reg_a0, 0);
    register_with(route, reg_a1, 0);
    unregister_one(route, "c1", "127.0.0.1:10911", "broker-a", 0);
    s = route_json_q(route, &q);
    assert_string_equal(
        s, "{\"brokerDatas\":[{\"brokerAddrs\":{\"1\":\"127.0.0.1:10921\"},"
           "\"brokerName\":\"broker-a\",\"cluster\":\"c1\","
           "\"enableActingMaster\":false}],\"filterServerTable\":{},"
           "\"queueDatas\":[" QD_A(6) "]}");
    ns_free(s);
}

/* 33 */
static void test_batch_unregister(void **state)
{
    struct ns_route *route = *state;
    struct ns_broker_ref refs[2] = {
        {"c1", "127.0.0.1:10911", "broker-a", 0},
        {"c1", "127.0.0.1:20911", "broker-b", 0},
    };

    register_with(route, reg_a0, 0);
    register_with(route, reg_b0, 0);
    assert_int_equal(ns_route_unregister_brokers(route, refs, 2), 0);
    assert_cluster_info(route, EMPTY_CLUSTER_INFO);
    assert_int_equal(ns_route_n_topics(route), 0);
}

/* Unregister of an unknown name or address changes nothing else. */
static void test_unregister_unknown(void **state)
{
    struct ns_route *route = *state;
    struct ns_buf before;
    struct ns_buf after;

    register_with(route, reg_a0, 0);
    state_of(route, &before);
    unregister_one(route, "c1", "127.0.0.1:30911", "broker-z", 0);
    unregister_one(route, "c9", "127.0.0.1:30911", "broker-a", 0);
    state_of(route, &after);
    assert_true(same_state(&before, &after));
    ns_buf_close(&before);
    ns_buf_close(&after);
}

/* 34 / 35 (route part): expiry by (cluster, addr). */
static void test_expire(void **state)
{
    struct ns_route *route = *state;
    struct ns_broker_ref a0 = {"c1", "127.0.0.1:10911", NULL, 0};
    struct ns_broker_ref a1 = {"c1", "127.0.0.1:10921", NULL, 0};
    struct ns_broker_ref unknown = {"c1", "127.0.0.1:55555", NULL, 0};

    register_with(route, reg_a0, 0);
    register_with(route, reg_a1, 0);
    assert_int_equal(ns_route_expire_brokers(route, &unknown, 1), 0);
    assert_int_equal(ns_route_n_brokers(route), 2);
    assert_int_equal(ns_route_expire_brokers(route, &a0, 1), 0);
    assert_route(
        route, "TopicA", NS_JSON_LEGACY,
        "{\"brokerDatas\":[{\"brokerAddrs\":{1:\"127.0.0.1:10921\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
    assert_int_equal(ns_route_expire_brokers(route, &a1, 1), 0);
    assert_route(route, "TopicA", NS_JSON_LEGACY, NULL);
    assert_cluster_info(route, EMPTY_CLUSTER_INFO);
    assert_int_equal(ns_route_n_brokers(route), 0);
}

/* An address registered in another cluster is not found by expiry in this one.
 */
static void test_expire_other_cluster(void **state)
{
    struct ns_route *route = *state;
    struct ns_broker_ref ref = {"c2", "127.0.0.1:10911", NULL, 0};

    register_with(route, reg_a0, 0);
    assert_int_equal(ns_route_expire_brokers(route, &ref, 1), 0);
    assert_int_equal(ns_route_n_brokers(route), 1);
    assert_routable(route, "TopicA");
}

/* 36 */
static void test_wipe_and_add_perm(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;
    int32_t n = -1;

    register_with(route, reg_a0, 0);
    assert_int_equal(ns_route_wipe_write_perm(route, "broker-a", &n), 0);
    assert_int_equal(n, 2);
    assert_route(
        route, "TopicB", NS_JSON_LEGACY,
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[" QD_A(4) "]}");
    assert_int_equal(ns_route_add_write_perm(route, "broker-a", &n), 0);
    assert_int_equal(n, 2);
    assert_route(
        route, "TopicB", NS_JSON_LEGACY,
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
    assert_int_equal(ns_route_wipe_write_perm(route, "broker-zz", &n), 0);
    assert_int_equal(n, 0);

    /* From perm 7 (with INHERIT) add gives exactly 6. */
    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10911", NULL, 0, 2);
    reg_topic(&r, "TopicA", 4, 4, 7, 0);
    reg_topic(&r, "TopicB", 4, 4, 4, 0);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    assert_int_equal(ns_route_add_write_perm(route, "broker-a", &n), 0);
    assert_int_equal(n, 2);
    assert_route(
        route, "TopicA", NS_JSON_LEGACY,
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
}

/* 37 */
static void test_delete_topic(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    register_with(route, reg_a0, 0);
    reg_init(&r, "c2", "broker-c", 0, "127.0.0.1:40911", NULL, 0, 1);
    reg_topic(&r, "TopicA", 4, 4, 6, 0);
    reg_topic(&r, "TopicC", 4, 4, 6, 0);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);

    assert_int_equal(ns_route_delete_topic(route, "TopicA", "c1"), 0);
    assert_route(
        route, "TopicA", NS_JSON_LEGACY,
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:40911\"},"
        "\"brokerName\":"
        "\"broker-c\",\"cluster\":\"c2\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":\"broker-c\","
        "\"perm\":6,\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":"
        "4}]}");
    assert_int_equal(ns_route_delete_topic(route, "TopicA", "nope"), 0);
    assert_routable(route, "TopicA");
    assert_int_equal(ns_route_delete_topic(route, "TopicB", NULL), 0);
    assert_route(route, "TopicB", NS_JSON_LEGACY, NULL);
    assert_int_equal(ns_route_delete_topic(route, "TopicA", ""), 0);
    assert_route(route, "TopicA", NS_JSON_LEGACY, NULL);
    assert_int_equal(ns_route_delete_topic(route, "Missing", ""), 0);
    assert_int_equal(ns_route_n_topics(route), 1);
}

/* 38, 39 */
static int topics_c1(const struct ns_route *route, struct ns_buf *out)
{
    return ns_route_encode_topics_by_cluster(route, "c1", out);
}

static int topics_unknown(const struct ns_route *route, struct ns_buf *out)
{
    return ns_route_encode_topics_by_cluster(route, "zz", out);
}

static void test_topic_lists(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    assert_body(route, ns_route_encode_all_topics, "{\"topicList\":[]}");
    register_with(route, reg_b0, 0);
    register_with(route, reg_a0, 0);
    reg_init(&r, "c2", "broker-c", 0, "127.0.0.1:40911", NULL, 0, 1);
    reg_topic(&r, "TopicA", 4, 4, 6, 0);
    reg_topic(&r, "TopicC", 4, 4, 6, 0);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    assert_body(route, ns_route_encode_all_topics,
                "{\"topicList\":[\"TopicA\",\"TopicB\",\"TopicC\"]}");
    assert_body(route, topics_c1, "{\"topicList\":[\"TopicA\",\"TopicB\"]}");
    assert_body(route, topics_unknown, "{\"topicList\":[]}");
}

/* 40 */
static void test_system_topics(void **state)
{
    struct ns_route *route = *state;

    assert_body(route, ns_route_encode_system_topics, "{\"topicList\":[]}");
    register_with(route, reg_b0, 0);
    register_with(route, reg_a1, 0);
    register_with(route, reg_a0, 0);
    assert_body(route, ns_route_encode_system_topics,
                "{\"brokerAddr\":\"127.0.0.1:10911\",\"topicList\":[\"broker-"
                "a\",\"broker-b\","
                "\"c1\"]}");
}

/* 41 */
static int unit_topics(const struct ns_route *route, struct ns_buf *out)
{
    return ns_route_encode_unit_topics(route, NS_UNIT_TOPICS, out);
}

static int unit_sub(const struct ns_route *route, struct ns_buf *out)
{
    return ns_route_encode_unit_topics(route, NS_UNIT_SUB_TOPICS, out);
}

static int unit_sub_ununit(const struct ns_route *route, struct ns_buf *out)
{
    return ns_route_encode_unit_topics(route, NS_UNIT_SUB_UNUNIT_TOPICS, out);
}

static void test_unit_lists(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;

    reg_init(&r, "c1", "broker-a", 0, "127.0.0.1:10911", NULL, 0, 1);
    reg_topic(&r, "F0", 4, 4, 6, 0);
    reg_topic(&r, "F1", 4, 4, 6, 1);
    reg_topic(&r, "F2", 4, 4, 6, 2);
    reg_topic(&r, "F3", 4, 4, 6, 3);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    /* broker-b (sorted after broker-a) disagrees; the first broker's flags
     * decide. */
    reg_init(&r, "c1", "broker-b", 0, "127.0.0.1:20911", NULL, 0, 1);
    reg_topic(&r, "F1", 4, 4, 6, 0);
    reg_topic(&r, "F2", 4, 4, 6, 0);
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    assert_body(route, unit_topics, "{\"topicList\":[\"F1\",\"F3\"]}");
    assert_body(route, unit_sub, "{\"topicList\":[\"F2\",\"F3\"]}");
    assert_body(route, unit_sub_ununit, "{\"topicList\":[\"F2\"]}");
}

/* 42 */
static void test_register_topic(void **state)
{
    struct ns_route *route = *state;
    struct ns_queue_data qd = {"broker-a", 8, 8, 6, 0};
    struct ns_queue_data two[2] = {{"broker-a", 8, 8, 6, 0},
                                   {"broker-x", 8, 8, 6, 0}};

    assert_int_equal(ns_route_register_topic(route, "TopicZ", &qd, 1), 0);
    assert_route(route, "TopicZ", NS_JSON_LEGACY, NULL);
    register_with(route, reg_a0, 0);
    assert_int_equal(ns_route_register_topic(route, "TopicZ", &qd, 1), 0);
    assert_route(
        route, "TopicZ", NS_JSON_LEGACY,
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":\"broker-a\","
        "\"perm\":6,\"readQueueNums\":8,\"topicSysFlag\":0,\"writeQueueNums\":"
        "8}]}");
    /* New topic with one unknown broker: nothing. */
    assert_int_equal(ns_route_register_topic(route, "TopicY", two, 2), 0);
    assert_route(route, "TopicY", NS_JSON_LEGACY, NULL);
    /* Existing topic: entries before the unknown one stay applied. */
    two[0].perm = 4;
    assert_int_equal(ns_route_register_topic(route, "TopicA", two, 2), 0);
    assert_route(
        route, "TopicA", NS_JSON_LEGACY,
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},"
        "\"brokerName\":"
        "\"broker-a\",\"cluster\":\"c1\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":\"broker-a\","
        "\"perm\":4,\"readQueueNums\":8,\"topicSysFlag\":0,\"writeQueueNums\":"
        "8}]}");
    assert_int_equal(ns_route_register_topic(route, "TopicX", NULL, 0), 0);
    assert_route(route, "TopicX", NS_JSON_LEGACY, NULL);
}

/* 43 */
static int member_a(const struct ns_route *route, struct ns_buf *out)
{
    return ns_route_encode_member_group(route, "c1", "broker-a", out);
}

static int member_unknown(const struct ns_route *route, struct ns_buf *out)
{
    return ns_route_encode_member_group(route, "c1", "broker-zz", out);
}

static void test_member_group(void **state)
{
    struct ns_route *route = *state;

    register_with(route, reg_a1, 0);
    register_with(route, reg_a0, 0);
    assert_body(route, member_a,
                "{\"brokerMemberGroup\":{\"brokerAddrs\":{0:\"127.0.0.1:"
                "10911\",1:\"127.0.0.1:"
                "10921\"},\"brokerName\":\"broker-a\",\"cluster\":\"c1\"}}");
    assert_body(route, member_unknown,
                "{\"brokerMemberGroup\":{\"brokerAddrs\":{},\"brokerName\":"
                "\"broker-zz\","
                "\"cluster\":\"c1\"}}");
}

/* 47 */
static void test_zone_filter(void **state)
{
    struct ns_route *route = *state;
    struct ns_register r;
    struct ns_route_query q = {
        .topic = "TopicA", .flavour = NS_JSON_STANDARD, .zone_name = "ZONE1"};
    char *s;

    reg_a0(&r, 0);
    reg_zone(&r, "zone1");
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    reg_b0(&r, 0);
    reg_zone(&r, "zone2");
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    s = route_json_q(route, &q);
    assert_string_equal(
        s, "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},"
           "\"brokerName\":\"broker-a\",\"cluster\":\"c1\","
           "\"enableActingMaster\":false,\"zoneName\":\"zone1\"}],"
           "\"filterServerTable\":{},\"queueDatas\":[" QD_A(6) "]}");
    ns_free(s);
    q.zone_name = NULL;
    s = route_json_q(route, &q);
    assert_non_null(strstr(s, "broker-b"));
    ns_free(s);

    /* A zone2 group without a master is kept. */
    unregister_one(route, "c1", "127.0.0.1:20911", "broker-b", 0);
    reg_init(&r, "c1", "broker-b", 1, "127.0.0.1:20921", NULL, 0, 1);
    reg_zone(&r, "zone2");
    do_register(route, &r, false, NULL, NULL);
    ns_register_close(&r);
    assert_int_equal(ns_route_register_topic(
                         route, "TopicA",
                         &(struct ns_queue_data){"broker-b", 4, 4, 6, 0}, 1),
                     0);
    q.zone_name = "zone1";
    s = route_json_q(route, &q);
    assert_string_equal(
        s,
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\"},"
        "\"brokerName\":\"broker-a\",\"cluster\":\"c1\","
        "\"enableActingMaster\":false,\"zoneName\":\"zone1\"},{"
        "\"brokerAddrs\":{1:\"127.0.0.1:20921\"},\"brokerName\":\"broker-b\","
        "\"cluster\":\"c1\",\"enableActingMaster\":false,\"zoneName\":"
        "\"zone2\"}],\"filterServerTable\":{},\"queueDatas\":[" QD_A(
            6) "," QD_B(6) "]}");
    ns_free(s);
}

/* Found only with queue data and at least one group (5.7 step 3). */
static void test_route_needs_group(void **state)
{
    struct ns_route *route = *state;
    struct ns_queue_data qd = {"broker-b", 4, 4, 6, 0};

    register_with(route, reg_b0, 0);
    register_with(route, reg_a0, 0);
    assert_int_equal(ns_route_register_topic(route, "OnlyB", &qd, 1), 0);
    assert_routable(route, "OnlyB");
    unregister_one(route, "c1", "127.0.0.1:20911", "broker-b", 0);
    assert_route(route, "OnlyB", NS_JSON_STANDARD, NULL);
    assert_int_equal(ns_route_n_topics(route), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unregister_only_member, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unregister_slave, setup, teardown),
        cmocka_unit_test_setup_teardown(test_acting_master, setup, teardown),
        cmocka_unit_test_setup_teardown(test_acting_master_off, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_batch_unregister, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unregister_unknown, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_expire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expire_other_cluster, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wipe_and_add_perm, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_delete_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topic_lists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_system_topics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unit_lists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_register_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_member_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zone_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_route_needs_group, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
